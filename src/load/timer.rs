//! A precise sleep for a single-threaded runtime: tokio's timers tick in
//! whole milliseconds, which alone would put up to 1 ms of lag on every
//! request. A timerfd armed for one expiry is waited on through the
//! runtime's own epoll, so the lane that owns it goes on driving its
//! connections while it waits and wakes within microseconds of the due time.

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// The timerfd, as tokio's `AsyncFd` wants it (a raw descriptor).
struct Fd(TimerFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

pub(super) struct Timer {
    fd: Option<AsyncFd<Fd>>,
}

impl Timer {
    /// A timer of the current runtime; one that falls back to tokio's
    /// millisecond timers when the system gives no timerfd.
    pub(super) fn new() -> Self {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .ok()
        .and_then(|fd| {
            // SAFETY: `Fd` owns the timerfd, so the descriptor stays open and
            // the same for as long as the `AsyncFd` that holds it.
            unsafe { AsyncFd::register(Fd(fd)) }.ok()
        });
        Timer { fd }
    }

    /// Sleeps until `due` (no later than `longest` from now).
    pub(super) async fn sleep_until(&self, due: Instant, longest: Duration) {
        let now = Instant::now();
        if due <= now {
            return;
        }
        let wait = (due - now).min(longest);
        let Some(fd) = &self.fd else {
            tokio::time::sleep(wait).await;
            return;
        };
        // A zero expiry would disarm it.
        let expiry = Expiration::OneShot(TimeSpec::from(wait.max(Duration::from_nanos(1))));
        if fd
            .get_ref()
            .0
            .set(expiry, TimerSetTimeFlags::empty())
            .is_err()
        {
            tokio::time::sleep(wait).await;
            return;
        }
        let mut expirations = [0u8; 8];
        loop {
            let Ok(mut ready) = fd.readable().await else {
                tokio::time::sleep(wait).await;
                return;
            };
            match nix::unistd::read(fd.get_ref().0.as_fd(), &mut expirations) {
                Ok(_) => return,
                Err(nix::errno::Errno::EAGAIN) => ready.clear_ready(),
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_wakes_on_time_and_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let timer = Timer::new();
            assert!(timer.fd.is_some(), "Linux has timerfd");
            for wait_us in [50, 300, 2_000] {
                let due = Instant::now() + Duration::from_micros(wait_us);
                timer.sleep_until(due, Duration::from_secs(1)).await;
                assert!(Instant::now() >= due);
            }
            // Bounded by `longest`; a due time passed returns at once.
            let started = Instant::now();
            let far = started + Duration::from_secs(60);
            timer.sleep_until(far, Duration::from_millis(5)).await;
            assert!(started.elapsed() < Duration::from_secs(30));
            timer.sleep_until(started, Duration::from_secs(1)).await;
        });
    }
}
