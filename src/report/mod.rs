//! Render: turn computed figures into files and terminal output. Nothing
//! here measures or judges; it only writes down what analysis found.

pub mod folder;
pub mod summary;
pub mod table;
