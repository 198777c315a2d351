//! `rlbench run --live`: a small page on loopback that follows the run
//! every second — the arm running and its progress, outcomes per second,
//! latency — then each arm's verdict and the report. `board` keeps what
//! the page shows; `server` serves it, and stops when the run does.

pub(crate) mod board;
pub(crate) mod server;

pub(crate) use board::Board;
