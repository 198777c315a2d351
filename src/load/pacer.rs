//! The pacer: a plain OS thread that walks the schedule and starts each
//! request at its intended time. tokio's timers tick in whole milliseconds,
//! which alone put ~1 ms of lag on every request; a thread sleeping with
//! the OS's high-resolution timer starts requests within tens of
//! microseconds, then hands them to the async runtime.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest single sleep: how quickly the pacer notices a stop.
const TICK: Duration = Duration::from_millis(5);

pub struct Outcome {
    pub scheduled: u64,
    pub sent: u64,
    pub interrupted: bool,
}

/// Sleeps until `due` (or a stop); false when stopped first.
pub fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(TICK));
    }
}

/// A free in-flight slot, waiting (in ticks, so a stop is seen) no later
/// than `deadline`. `None` when stopped or past the deadline. `handle` must
/// belong to a multi-thread runtime, whose workers drive the timers.
pub fn permit(
    permits: &Arc<Semaphore>,
    handle: &Handle,
    deadline: Instant,
    stop: &AtomicBool,
) -> Option<OwnedSemaphorePermit> {
    if let Ok(p) = permits.clone().try_acquire_owned() {
        return Some(p);
    }
    loop {
        if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
            return None;
        }
        let wait = permits.clone().acquire_owned();
        if let Ok(Ok(p)) = handle.block_on(async { tokio::time::timeout(TICK, wait).await }) {
            return Some(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeping_stops_early_when_told() {
        let stop = AtomicBool::new(true);
        let started = Instant::now();
        assert!(!sleep_until(started + Duration::from_secs(60), &stop));
        assert!(started.elapsed() < Duration::from_secs(1));
        let go = AtomicBool::new(false);
        assert!(sleep_until(Instant::now() + Duration::from_millis(2), &go));
    }

    #[test]
    fn a_full_semaphore_gives_no_permit_past_the_deadline() {
        // As in rlbench: a multi-thread runtime whose workers drive the timers
        // while the pacer thread waits on it.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let permits = Arc::new(Semaphore::new(1));
        let stop = AtomicBool::new(false);
        let held = permit(
            &permits,
            rt.handle(),
            Instant::now() + Duration::from_secs(1),
            &stop,
        );
        assert!(held.is_some());
        let none = permit(
            &permits,
            rt.handle(),
            Instant::now() + Duration::from_millis(20),
            &stop,
        );
        assert!(none.is_none());
        drop(held);
        assert!(permit(&permits, rt.handle(), Instant::now(), &stop).is_some());
    }
}
