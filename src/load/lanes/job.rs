//! One request as a connection task gets it, and the slot a parked
//! connection task waits on for its next one (or to be retired).

use crate::events::RetryOf;
use crate::load::retry::Attempts;
use std::cell::Cell;
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::Instant;

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
pub(crate) struct Slot {
    job: Cell<Option<Job>>,
    waker: Cell<Option<Waker>>,
    /// Told to close its connection and end: it sat idle too long.
    retired: Cell<bool>,
    /// When it last parked.
    parked: Cell<Instant>,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            job: Cell::new(None),
            waker: Cell::new(None),
            retired: Cell::new(false),
            parked: Cell::new(Instant::now()),
        }
    }
}

impl Slot {
    pub(crate) fn give(&self, job: Job) {
        self.job.set(Some(job));
        self.wake();
    }

    /// Ends the parked task (taken from the idle list first).
    pub(crate) fn retire(&self) {
        self.retired.set(true);
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Notes when the task parked (before it waits in [`Slot::next`]).
    pub(crate) fn park(&self, now: Instant) {
        self.parked.set(now);
    }

    /// Parked since before `when`.
    pub(crate) fn idle_since(&self, when: Instant) -> bool {
        self.parked.get() <= when
    }

    /// The next job; `None`: retired.
    pub(crate) async fn next(&self) -> Option<Job> {
        poll_fn(|cx| match self.job.take() {
            Some(job) => Poll::Ready(Some(job)),
            None if self.retired.get() => Poll::Ready(None),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Wake};

    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn job(seq: u64) -> Job {
        Job {
            seq,
            key: "k".into(),
            target: 0,
            route: 0,
            intended_us: 0,
            retry_of: None,
            attempts: None,
        }
    }

    #[test]
    fn a_parked_task_gets_its_job_or_its_retirement_and_is_woken_for_either() {
        let woken = Arc::new(Count(Default::default()));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let slot = Slot::default();
        {
            let mut next = pin!(slot.next());
            assert!(next.as_mut().poll(&mut cx).is_pending());
            slot.give(job(7));
            match next.as_mut().poll(&mut cx) {
                Poll::Ready(Some(j)) => assert_eq!(j.seq, 7),
                _ => panic!("the job given"),
            }
        }
        {
            let mut next = pin!(slot.next());
            assert!(next.as_mut().poll(&mut cx).is_pending());
            slot.retire();
            assert!(matches!(next.as_mut().poll(&mut cx), Poll::Ready(None)));
        }
        assert_eq!(woken.0.load(std::sync::atomic::Ordering::Relaxed), 2);
        // A job given before the retirement is still served first.
        let slot = Slot::default();
        slot.give(job(8));
        slot.retire();
        let mut next = pin!(slot.next());
        assert!(matches!(next.as_mut().poll(&mut cx), Poll::Ready(Some(_))));
    }

    #[test]
    fn idle_since_compares_with_the_last_park() {
        let slot = Slot::default();
        let t0 = Instant::now();
        slot.park(t0);
        assert!(slot.idle_since(t0));
        assert!(!slot.idle_since(t0 - std::time::Duration::from_millis(1)));
    }
}
