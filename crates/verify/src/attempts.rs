//! Limiters that count every attempt (`count_rejected`: HAProxy's stick
//! tables, rate-limiter-flexible's `consume`): a rejected request counts
//! against the limit as an admit does, so a client that keeps sending
//! stays limited. An admit then needs fewer than the limit of attempts
//! counted before it, and those are known without any greedy: dropping an
//! admit does not take its attempt back.
//!
//! An attempt `r` surely counted before an admit `a`: `r` was decided
//! before `a` read its clock (`r.done + slack < a.sent`: a reading comes
//! before the decision reaches the state), and `r`'s reading is surely
//! inside `a`'s window — readings lie within their request's interval, give
//! or take the slack, so `a.done + slack − r.sent` bounds how far apart
//! they were.

use super::removal::Item;

/// What an admit needs of the attempts before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attempts {
    /// Fewer than `limit` attempts whose readings lie within `span` before
    /// its own (less than `span`, or at most it when `inclusive`): a sliding
    /// log's window, a segmented window's last S − 1 segments.
    Within {
        limit: u64,
        span: i64,
        inclusive: bool,
    },
    /// A sliding counter's estimate below `limit`: an attempt within
    /// `L < window` before the admit's reading weighs more than `1 − L/W`
    /// in it (it is in the current window, weight 1, or in the previous
    /// one, weighted by the share of the current still to come, which is
    /// more than `1 − L/W` when the attempt is within L). One more than
    /// the limit must be proven: an integer estimate (HAProxy's) may round
    /// the previous window's share down by one.
    Weighted { limit: u64, window: i64 },
}

/// For each of `admits`: the attempts (indices into `attempts`) that make
/// it impossible for a correct limiter, or `None`. `attempts` holds every
/// decided request (admits and rejects), `x = sent`, `y = done`; each admit
/// is among them too, and is never counted against itself.
pub(crate) fn refused(
    check: Attempts,
    admits: &[Item],
    attempts: &[Item],
    slack: i64,
) -> Vec<Option<Vec<usize>>> {
    let mut by_sent: Vec<usize> = (0..attempts.len()).collect();
    by_sent.sort_by_key(|&i| (attempts[i].x, i));
    let sents: Vec<i64> = by_sent.iter().map(|&i| attempts[i].x).collect();
    admits
        .iter()
        .map(|a| {
            let before = |r: &Item| r.y.saturating_add(slack) < a.x;
            // Candidates, latest sent first: each one further back widens L.
            let upto = sents.partition_point(|&x| x < a.x);
            let mut counted = Vec::new();
            for &i in by_sent[..upto].iter().rev() {
                let r = &attempts[i];
                let apart = a.y.saturating_add(slack).saturating_sub(r.x);
                match check {
                    Attempts::Within {
                        limit,
                        span,
                        inclusive,
                    } => {
                        if apart > span || (apart == span && !inclusive) {
                            break;
                        }
                        if before(r) {
                            counted.push(i);
                            if counted.len() as u64 >= limit {
                                return Some(counted);
                            }
                        }
                    }
                    Attempts::Weighted { limit, window } => {
                        if apart >= window {
                            break;
                        }
                        if before(r) {
                            counted.push(i);
                            // k attempts, each weighing more than 1 − L/W.
                            let k = counted.len() as i128;
                            let weight = (window - apart.max(0)) as i128;
                            if k * weight >= (limit as i128 + 1) * window as i128 {
                                return Some(counted);
                            }
                        }
                    }
                }
            }
            None
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(points: &[(i64, i64)]) -> Vec<Item> {
        points.iter().map(|&(x, y)| Item { x, y }).collect()
    }

    const LOG: Attempts = Attempts::Within {
        limit: 2,
        span: 1_000,
        inclusive: false,
    };

    #[test]
    fn an_admit_after_the_limit_of_attempts_within_the_window_is_refused() {
        // Two rejected attempts, then an admit 500 µs later: 2 attempts
        // counted, the limit is 2.
        let attempts = at(&[(0, 10), (100, 110), (500, 510)]);
        let admits = at(&[(500, 510)]);
        assert_eq!(refused(LOG, &admits, &attempts, 0), [Some(vec![1, 0])]);
        // One of them a window before: it is forgotten (1010 − 0 ≥ 1000).
        let attempts = at(&[(0, 10), (100, 110), (1_000, 1_010)]);
        assert_eq!(
            refused(LOG, &at(&[(1_000, 1_010)]), &attempts, 0),
            [None],
            "at the boundary the window may have let the first go"
        );
        let attempts = at(&[(2, 10), (100, 110), (1_000, 1_001)]);
        assert!(refused(LOG, &at(&[(1_000, 1_001)]), &attempts, 0)[0].is_some());
    }

    #[test]
    fn an_attempt_that_may_come_after_the_admit_does_not_count() {
        // The second attempt was still open when the admit was sent.
        let attempts = at(&[(0, 10), (100, 600), (500, 510)]);
        assert_eq!(refused(LOG, &at(&[(500, 510)]), &attempts, 0), [None]);
        // ... and the slack moves "surely before" further back.
        let attempts = at(&[(0, 10), (100, 495), (500, 510)]);
        assert!(refused(LOG, &at(&[(500, 510)]), &attempts, 0)[0].is_some());
        assert_eq!(refused(LOG, &at(&[(500, 510)]), &attempts, 5), [None]);
    }

    #[test]
    fn a_counters_attempts_weigh_by_how_far_back_they_are() {
        // Limit 2 (3 to prove, for rounding), window 1000: four attempts
        // 400 µs back weigh > 0.6 each (2.4: fine); six weigh > 3.6.
        let w = Attempts::Weighted {
            limit: 2,
            window: 1_000,
        };
        let with = |n: usize, l: i64| {
            let mut v = vec![Item { x: 0, y: 0 }; n];
            v.push(Item { x: l, y: l });
            v
        };
        let admit = |l: i64| vec![Item { x: l, y: l }];
        assert_eq!(refused(w, &admit(400), &with(4, 400), 0), [None]);
        assert!(refused(w, &admit(400), &with(6, 400), 0)[0].is_some());
        // Boundary: six at L = 500 weigh more than 6 × 0.5 = 3; at 501 not.
        assert!(refused(w, &admit(500), &with(6, 500), 0)[0].is_some());
        assert_eq!(refused(w, &admit(501), &with(6, 501), 0), [None]);
    }
}
