//! One request as a connection task gets it, and the slot a parked
//! connection task waits on for its next one.

use crate::events::RetryOf;
use crate::load::retry::Attempts;
use std::cell::Cell;
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// One request as a connection task gets it.
pub(crate) struct Job {
    pub(crate) seq: u64,
    pub(crate) key: String,
    pub(crate) target: usize,
    /// Its target, or with per-key addresses its (target, key): which
    /// connections may carry it.
    pub(crate) route: usize,
    pub(crate) intended_us: u64,
    pub(crate) retry_of: Option<RetryOf>,
    pub(crate) attempts: Option<Attempts>,
}

/// A parked connection task: where its next job is put, and how it is woken.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) job: Cell<Option<Job>>,
    pub(crate) waker: Cell<Option<Waker>>,
}

impl Slot {
    pub(crate) fn give(&self, job: Job) {
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    pub(crate) async fn next(&self) -> Job {
        poll_fn(|cx| match self.job.take() {
            Some(job) => Poll::Ready(job),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}
