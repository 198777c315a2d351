//! What a run leaves on disk, as data: the run folder's layout, the
//! records written beside the events (`run.json`, `events/<arm>.json`)
//! and summary.json's schema. The compute stages fill these types; the
//! report renders them; `rlbench report` rebuilds from them alone. Every
//! failure is a [`StoreError`] carrying its exit.

pub mod atomic;
mod error;
pub mod folder;
pub mod names;
pub mod probes;
pub mod records;
pub mod summary;

pub use error::StoreError;
