//! False rejects: 429s that a correct limiter would certainly not have
//! given, whatever the timing. Every admit and every request with an
//! unknown result (error, timeout) counts as an admit that may have happened
//! anywhere inside its interval, and at the least favourable place.

use super::removal::Item;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectCheck {
    /// The limiter only counts admits decided within `span` before the
    /// decision; fewer than `limit` of them means it must admit.
    Lookback { limit: u64, span: i64 },
    /// A bucket of `burst` refilled at `count` per `per` µs; admits while it
    /// holds at least one token.
    Bucket { burst: u64, count: u64, per: i64 },
}

/// How long a limiter remembers an admit (µs): its window, or the time a
/// bucket takes to refill from empty.
pub fn memory(check: RejectCheck) -> i64 {
    match check {
        RejectCheck::Lookback { span, .. } => span,
        RejectCheck::Bucket { burst, count, per } => {
            let count = count.max(1) as i128;
            ((burst as i128 * per as i128 + count - 1) / count).min(i64::MAX as i128) as i64
        }
    }
}

/// `admits`: possible admits as `x = sent, y = done`; `rejects` likewise.
pub fn count(check: RejectCheck, admits: &[Item], rejects: &[Item], slack: i64) -> u64 {
    flags(check, admits, rejects, slack)
        .into_iter()
        .filter(|&f| f)
        .count() as u64
}

/// For each of `rejects`, in order: whether it is a false reject.
pub fn flags(check: RejectCheck, admits: &[Item], rejects: &[Item], slack: i64) -> Vec<bool> {
    let mut sents: Vec<i64> = admits.iter().map(|a| a.x).collect();
    sents.sort_unstable();
    let up_to = |t: i64| sents.partition_point(|&s| s <= t) as u64;
    match check {
        RejectCheck::Lookback { limit, span } => {
            let mut dones: Vec<i64> = admits.iter().map(|a| a.y).collect();
            dones.sort_unstable();
            rejects
                .iter()
                .map(|r| {
                    // Admits decided before s - span - slack cannot count.
                    let gone = dones.partition_point(|&d| d < r.x - span - slack) as u64;
                    up_to(r.y + slack) - gone < limit
                })
                .collect()
        }
        RejectCheck::Bucket { burst, count, per } => {
            bucket(burst, count, per, &sents, rejects, admits, slack)
        }
    }
}

/// Lower bound on the tokens left when each reject was decided: a bucket
/// that takes a token at every possible admit's send time (never refusing)
/// holds at most δ·rate more than the real one, δ the longest interval.
fn bucket(
    burst: u64,
    count: u64,
    per: i64,
    sents: &[i64],
    rejects: &[Item],
    admits: &[Item],
    slack: i64,
) -> Vec<bool> {
    let (count, per) = (count as i128, per as i128);
    let delta = admits.iter().map(|a| a.y - a.x).max().unwrap_or(0) + slack;
    let full = burst as i128 * per;
    let mut order: Vec<usize> = (0..rejects.len()).collect();
    order.sort_by_key(|&i| rejects[i].x);
    let (mut tokens, mut last, mut next) = (full, i64::MIN, 0usize);
    let mut advance = |tokens: &mut i128, t: i64| {
        if last != i64::MIN {
            *tokens = (*tokens + (t - last) as i128 * count).min(full);
        }
        last = t;
    };
    let mut flags = vec![false; rejects.len()];
    for i in order {
        let r = &rejects[i];
        while next < sents.len() && sents[next] <= r.x {
            advance(&mut tokens, sents[next]);
            tokens -= per;
            next += 1;
        }
        advance(&mut tokens, r.x);
        let later = (sents.partition_point(|&s| s <= r.y + slack) - next) as i128;
        flags[i] = tokens - later * per - delta as i128 * count >= per;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pairs: &[(i64, i64)]) -> Vec<Item> {
        pairs.iter().map(|&(x, y)| Item { x, y }).collect()
    }

    const LOG: RejectCheck = RejectCheck::Lookback {
        limit: 2,
        span: 1_000,
    };

    #[test]
    fn a_reject_with_a_full_window_is_correct() {
        let admits = at(&[(0, 10), (100, 110)]);
        assert_eq!(count(LOG, &admits, &at(&[(500, 510)]), 0), 0);
    }

    #[test]
    fn a_reject_with_spare_capacity_is_false() {
        let admits = at(&[(0, 10)]);
        assert_eq!(count(LOG, &admits, &at(&[(500, 510)]), 0), 1);
    }

    #[test]
    fn the_boundary_gives_the_limiter_the_benefit_of_the_doubt() {
        let admits = at(&[(0, 10), (100, 110)]);
        // The first admit may have been decided at 10; a reject decided in
        // [1005, 1015] may still see it inside its window.
        assert_eq!(count(LOG, &admits, &at(&[(1_005, 1_015)]), 0), 0);
        // From 1011 on it has certainly left.
        assert_eq!(count(LOG, &admits, &at(&[(1_011, 1_020)]), 0), 1);
    }

    #[test]
    fn unknown_results_count_as_admits() {
        let reject = at(&[(900, 910)]);
        assert_eq!(count(LOG, &at(&[(0, 10)]), &reject, 0), 1);
        let with_timeout = at(&[(0, 10), (50, 2_050)]); // the 2nd timed out
        assert_eq!(count(LOG, &with_timeout, &reject, 0), 0);
    }

    const BUCKET: RejectCheck = RejectCheck::Bucket {
        burst: 2,
        count: 1,
        per: 100,
    };

    #[test]
    fn a_bucket_reject_after_a_drained_burst_is_correct() {
        let admits = at(&[(0, 1), (0, 1)]);
        assert_eq!(count(BUCKET, &admits, &at(&[(50, 51)]), 0), 0);
    }

    #[test]
    fn a_bucket_reject_with_tokens_left_is_false() {
        let admits = at(&[(0, 1)]);
        // One token left plus 0.5 refilled at 50 µs.
        assert_eq!(count(BUCKET, &admits, &at(&[(50, 51)]), 0), 1);
        // After the refill the drained bucket has a token again.
        let drained = at(&[(0, 1), (0, 1)]);
        assert_eq!(count(BUCKET, &drained, &at(&[(150, 151)]), 0), 1);
        // ...but not yet at 99 µs (plus the 1 µs the admits may lag).
        assert_eq!(count(BUCKET, &drained, &at(&[(99, 100)]), 0), 0);
    }

    #[test]
    fn a_concurrent_admit_may_have_taken_the_token() {
        let admits = at(&[(0, 1), (40, 60)]);
        assert_eq!(count(BUCKET, &admits, &at(&[(50, 55)]), 0), 0);
    }
}
