//! Binary search from a hint: where a key's requests come nearly in order,
//! the answer for one is near the answer for the one before, and an
//! exponential search out from there costs O(log d) for a distance d where
//! a plain binary search costs O(log n) steps scattered over the whole
//! slice. The answer is the same as `partition_point`'s, whatever the hint.

/// `v.partition_point(pred)` (`pred` true on a prefix of `v`), searched
/// out from `hint`.
pub(crate) fn partition_point_near<T>(v: &[T], hint: usize, pred: impl Fn(&T) -> bool) -> usize {
    let hint = hint.min(v.len());
    let (lo, hi) = if hint < v.len() && pred(&v[hint]) {
        // The answer is past `hint`: double the step until `pred` fails.
        let (mut lo, mut step) = (hint + 1, 1);
        loop {
            let probe = hint + step;
            if probe >= v.len() {
                break (lo, v.len());
            }
            if !pred(&v[probe]) {
                break (lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        // The answer is at or before `hint`: step back until `pred` holds.
        let (mut hi, mut step) = (hint, 1);
        loop {
            if step > hint {
                break (0, hi);
            }
            let probe = hint - step;
            if pred(&v[probe]) {
                break (probe + 1, hi);
            }
            hi = probe;
            step *= 2;
        }
    };
    lo + v[lo..hi].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn finds_what_partition_point_finds_from_any_hint() {
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..2_000 {
            let n = rng.random_range(0..70);
            let mut v: Vec<i64> = (0..n).map(|_| rng.random_range(0..40)).collect();
            v.sort();
            let t = rng.random_range(-1..42);
            let want = v.partition_point(|&x| x < t);
            for hint in 0..=n + 2 {
                assert_eq!(
                    partition_point_near(&v, hint, |&x| x < t),
                    want,
                    "{v:?} < {t} from {hint}"
                );
            }
        }
    }
}
