//! Clients that behave like clients (`[load] retry`): on a limited answer
//! a caller waits — what `Retry-After` says when told to respect it, else
//! an exponential backoff with full jitter — and tries again, up to `max`
//! more times. Each retry is a request of its own on the trace, linked to
//! the first attempt; the verifier judges every attempt as usual.
//!
//! [`Retry::wait`] is pure: which answers are retried and how long to
//! wait, from the answer, the attempt and a jitter draw. [`Attempts`]
//! follows one request's chain (its draws seeded, so a run repeats), and
//! [`pause`] waits as the load loops do: bounded by the run's end and
//! stopped by an interrupt.

use crate::events::advertised::Advertised;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Longest single sleep of a waiting retry: how quickly it sees a stop.
const SLICE: Duration = Duration::from_millis(20);

/// How the wait grows when the answer says nothing (or is not listened to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backoff {
    /// A random wait up to `base · 2^(retry − 1)`, at most `cap` ("full
    /// jitter": callers that were limited together do not come back together).
    Exponential,
    /// `base` every time.
    Constant,
}

impl Backoff {
    pub(crate) const NAMES: &'static str = "exponential or constant";

    pub(crate) fn from_name(name: &str) -> Option<Backoff> {
        match name {
            "exponential" => Some(Backoff::Exponential),
            "constant" => Some(Backoff::Constant),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Retry {
    /// Statuses retried; empty: the target's limited statuses.
    pub on: Vec<u16>,
    /// Wait what `Retry-After` says when an answer carries it.
    pub respect_retry_after: bool,
    pub backoff: Backoff,
    /// The first backoff (and the constant one).
    pub base: Duration,
    /// The longest backoff (`Retry-After` is taken as it is).
    pub cap: Duration,
    /// Retries after the first attempt, at most.
    pub max: u32,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            on: Vec::new(),
            respect_retry_after: true,
            backoff: Backoff::Exponential,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
            max: 3,
        }
    }
}

impl Retry {
    /// How long to wait before retry number `retry` (1 for the first)
    /// after an answer of `status` that advertised `advertised`, or `None`
    /// when it is not retried. `jitter` is a draw in `[0, 1)`; `limited`
    /// stands for an empty `on`.
    pub(crate) fn wait(
        &self,
        status: u16,
        advertised: Option<&Advertised>,
        retry: u32,
        limited: &[u16],
        jitter: f64,
    ) -> Option<Duration> {
        let on = if self.on.is_empty() {
            limited
        } else {
            &self.on
        };
        if retry == 0 || retry > self.max || status == 0 || !on.contains(&status) {
            return None;
        }
        if self.respect_retry_after {
            if let Some(ms) = advertised.and_then(|a| a.retry_after_ms) {
                return Some(Duration::from_millis(ms));
            }
        }
        Some(match self.backoff {
            Backoff::Constant => self.base,
            Backoff::Exponential => {
                let doubled = self
                    .base
                    .saturating_mul(1u32 << (retry - 1).min(30))
                    .min(self.cap);
                doubled.mul_f64(jitter.clamp(0.0, 1.0))
            }
        })
    }

    /// In words, for the report: `up to 3 retries on 429, Retry-After
    /// respected, exponential backoff from 100ms to 5s`.
    pub(crate) fn describe(&self, limited: &[u16]) -> String {
        let on = if self.on.is_empty() {
            limited
        } else {
            &self.on
        };
        let on: Vec<String> = on.iter().map(u16::to_string).collect();
        let backoff = match self.backoff {
            Backoff::Exponential => format!(
                "exponential backoff with jitter from {} to {}",
                humantime::format_duration(self.base),
                humantime::format_duration(self.cap)
            ),
            Backoff::Constant => format!("{} between tries", humantime::format_duration(self.base)),
        };
        format!(
            "up to {} {} on {}, {}{backoff}",
            self.max,
            if self.max == 1 { "retry" } else { "retries" },
            on.join("/"),
            if self.respect_retry_after {
                "Retry-After respected, else "
            } else {
                "Retry-After ignored, "
            }
        )
    }
}

/// One request's attempts: how long to wait before each retry.
pub(crate) struct Attempts {
    /// The first attempt's seq.
    pub first: u64,
    rng: SmallRng,
    /// Retries made so far.
    made: u32,
}

impl Attempts {
    /// The chain of the request first sent as `first` (its seq), its
    /// jitter drawn from `seed` and `first`.
    pub(crate) fn new(seed: u64, first: u64) -> Self {
        Attempts {
            first,
            rng: SmallRng::seed_from_u64(seed ^ first.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            made: 0,
        }
    }

    /// The wait before the next retry after an answer, or `None` when the
    /// chain ends here (`limited` stands for an empty `retry.on`).
    pub(crate) fn after(
        &mut self,
        retry: &Retry,
        limited: &[u16],
        status: u16,
        advertised: Option<&Advertised>,
    ) -> Option<Duration> {
        let jitter = self.rng.random::<f64>();
        let wait = retry.wait(status, advertised, self.made + 1, limited, jitter)?;
        self.made += 1;
        Some(wait)
    }

    /// The link the retry `after` last granted carries.
    pub(crate) fn link(&self) -> crate::events::RetryOf {
        crate::events::RetryOf {
            first: self.first,
            attempt: self.attempt(),
        }
    }

    /// The attempt number of the retry `after` last granted (2 for the
    /// first retry).
    pub(crate) fn attempt(&self) -> u8 {
        (self.made + 1).min(u32::from(u8::MAX)) as u8
    }
}

/// A retry's `seq`: its first attempt's plus `(attempt − 1) · 2⁵⁶`. Unique
/// without any shared counter (first attempts are numbered by their place
/// in the schedule, far below 2⁵⁶), so a schedule split between lanes, or
/// later between machines, numbers its retries the same.
pub(crate) fn seq_of(link: crate::events::RetryOf) -> u64 {
    link.first
        .wrapping_add(u64::from(link.attempt.saturating_sub(1)) << 56)
}

/// Waits until `due` in short slices; false (at once, or when it is seen)
/// when `due` is past `deadline` or `stop` is set: the retry is given up.
pub(crate) async fn pause(due: Instant, deadline: Instant, stop: &AtomicBool) -> bool {
    if due > deadline {
        return false;
    }
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        tokio::time::sleep((due - now).min(SLICE)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(ms: u64) -> Advertised {
        Advertised {
            retry_after_ms: Some(ms),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_listed_statuses_are_retried_and_only_max_times() {
        let r = Retry::default();
        assert!(r.wait(429, None, 1, &[429], 0.5).is_some());
        assert!(r.wait(429, None, 3, &[429], 0.5).is_some());
        assert_eq!(r.wait(429, None, 4, &[429], 0.5), None);
        assert_eq!(r.wait(200, None, 1, &[429], 0.5), None);
        assert_eq!(r.wait(503, None, 1, &[429], 0.5), None);
        // No answer at all is not a limited answer.
        assert_eq!(r.wait(0, None, 1, &[429], 0.5), None);
        // An empty `on` means the target's limited statuses (nginx's 503).
        assert!(r.wait(503, None, 1, &[503], 0.5).is_some());
        let on_503 = Retry {
            on: vec![503],
            ..Retry::default()
        };
        assert_eq!(on_503.wait(429, None, 1, &[429], 0.5), None);
        assert!(on_503.wait(503, None, 1, &[429], 0.5).is_some());
    }

    #[test]
    fn retry_after_is_waited_exactly_when_respected() {
        let r = Retry::default();
        let a = told(1_500);
        assert_eq!(
            r.wait(429, Some(&a), 1, &[429], 0.0),
            Some(Duration::from_millis(1_500))
        );
        // Taken as told even past the backoff's cap.
        let a = told(60_000);
        assert_eq!(
            r.wait(429, Some(&a), 2, &[429], 0.9),
            Some(Duration::from_secs(60))
        );
        let deaf = Retry {
            respect_retry_after: false,
            backoff: Backoff::Constant,
            ..Retry::default()
        };
        assert_eq!(
            deaf.wait(429, Some(&a), 1, &[429], 0.3),
            Some(Duration::from_millis(100))
        );
        // Headers without Retry-After: the backoff.
        let silent = Advertised::default();
        assert_eq!(
            Retry {
                backoff: Backoff::Constant,
                ..Retry::default()
            }
            .wait(429, Some(&silent), 1, &[429], 0.3),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn the_exponential_backoff_doubles_up_to_its_cap_and_is_jittered() {
        let r = Retry {
            max: 10,
            ..Retry::default()
        };
        // With the highest draw the wait is the ceiling itself.
        let ceiling = |retry| r.wait(429, None, retry, &[429], 1.0).unwrap();
        assert_eq!(ceiling(1), Duration::from_millis(100));
        assert_eq!(ceiling(2), Duration::from_millis(200));
        assert_eq!(ceiling(3), Duration::from_millis(400));
        assert_eq!(ceiling(6), Duration::from_millis(3_200));
        assert_eq!(ceiling(7), Duration::from_secs(5));
        assert_eq!(ceiling(10), Duration::from_secs(5));
        // Full jitter: anywhere from nothing to the ceiling.
        assert_eq!(r.wait(429, None, 3, &[429], 0.0), Some(Duration::ZERO));
        assert_eq!(
            r.wait(429, None, 3, &[429], 0.25),
            Some(Duration::from_millis(100))
        );
        // A huge retry number neither overflows nor passes the cap.
        let many = Retry {
            max: u32::MAX,
            ..Retry::default()
        };
        assert_eq!(
            many.wait(429, None, 1_000, &[429], 1.0),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn a_chain_ends_after_max_retries_and_repeats_with_its_seed() {
        let r = Retry::default();
        let waits = |seed, first| {
            let mut a = Attempts::new(seed, first);
            let mut out = Vec::new();
            while let Some(w) = a.after(&r, &[429], 429, None) {
                out.push((w, a.attempt()));
            }
            out
        };
        let one = waits(7, 11);
        assert_eq!(one.len(), 3);
        assert_eq!(one.iter().map(|w| w.1).collect::<Vec<_>>(), vec![2, 3, 4]);
        for (i, (w, _)) in one.iter().enumerate() {
            assert!(*w <= Duration::from_millis(100 << i), "{w:?}");
        }
        assert_eq!(one, waits(7, 11));
        assert_ne!(one, waits(7, 12));
        // An admit ends the chain at once.
        let mut a = Attempts::new(7, 11);
        assert_eq!(a.after(&r, &[429], 200, None), None);
        assert!(a.after(&r, &[429], 429, None).is_some());
        assert_eq!(
            a.link(),
            crate::events::RetryOf {
                first: 11,
                attempt: 2
            }
        );
    }

    #[test]
    fn a_retry_seq_never_meets_a_first_attempt_or_another_retry() {
        use crate::events::RetryOf;
        let first = 12_345;
        let seqs: Vec<u64> = (2..=11)
            .map(|attempt| seq_of(RetryOf { first, attempt }))
            .collect();
        assert_eq!(seqs[0], first + (1 << 56));
        assert!(seqs.iter().all(|&s| s >= 1 << 56));
        let mut unique = seqs.clone();
        unique.dedup();
        assert_eq!(unique.len(), seqs.len());
    }

    #[tokio::test]
    async fn a_pause_gives_up_past_the_deadline_or_on_a_stop() {
        let now = Instant::now();
        let go = AtomicBool::new(false);
        let soon = now + Duration::from_millis(5);
        assert!(pause(soon, now + Duration::from_secs(1), &go).await);
        assert!(Instant::now() >= soon);
        let later = Instant::now() + Duration::from_secs(60);
        assert!(!pause(later, later - Duration::from_secs(1), &go).await);
        let stopped = AtomicBool::new(true);
        let started = std::time::Instant::now();
        assert!(!pause(later, later, &stopped).await);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn it_reads_as_configured() {
        assert_eq!(
            Retry::default().describe(&[429]),
            "up to 3 retries on 429, Retry-After respected, else exponential backoff with jitter from 100ms to 5s"
        );
        let r = Retry {
            on: vec![429, 503],
            respect_retry_after: false,
            backoff: Backoff::Constant,
            base: Duration::from_millis(250),
            max: 1,
            ..Retry::default()
        };
        assert_eq!(
            r.describe(&[429]),
            "up to 1 retry on 429/503, Retry-After ignored, 250ms between tries"
        );
    }
}
