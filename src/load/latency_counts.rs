//! Latencies while the load runs, cheap enough for the generator's hot
//! path: a fixed log-linear histogram of atomic counts (8 buckets per
//! power of two, each at most 12.5 % wide), fed once per batch of events
//! with one atomic add per distinct bucket. Readers (the live page) take
//! snapshots and subtract them for the last second's percentiles. The
//! summary's exact figures come from the trace, never from here.

use std::sync::atomic::{AtomicU64, Ordering};

/// Buckets: 0..8 µs one each, then 8 per power of two up to ~4.7 hours.
pub(crate) const BUCKETS: usize = 256;

/// Counts of latencies (µs) per bucket.
pub(crate) struct LatencyCounts {
    buckets: Box<[AtomicU64]>,
}

impl Default for LatencyCounts {
    fn default() -> Self {
        LatencyCounts {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl LatencyCounts {
    /// Counts latencies (µs): buckets sorted per chunk of 64, one atomic
    /// add per run of equal buckets (a batch's latencies cluster).
    pub(crate) fn add_all(&self, micros: impl Iterator<Item = u64>) {
        let mut chunk = [0u8; 64];
        let mut n = 0;
        for us in micros {
            chunk[n] = bucket(us);
            n += 1;
            if n == chunk.len() {
                self.add_chunk(&mut chunk[..n]);
                n = 0;
            }
        }
        self.add_chunk(&mut chunk[..n]);
    }

    fn add_chunk(&self, chunk: &mut [u8]) {
        chunk.sort_unstable();
        for run in chunk.chunk_by(|a, b| a == b) {
            self.buckets[usize::from(run[0])].fetch_add(run.len() as u64, Ordering::Relaxed);
        }
    }

    /// Every bucket's count so far.
    pub(crate) fn snapshot(&self) -> Vec<u64> {
        self.buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }
}

/// The bucket of a latency of `us` µs.
pub(crate) fn bucket(us: u64) -> u8 {
    if us < 8 {
        return us as u8;
    }
    let power = 63 - us.leading_zeros() as u64; // ≥ 3
    let sub = (us >> (power - 3)) & 7;
    (8 + (power - 3) * 8 + sub).min(BUCKETS as u64 - 1) as u8
}

/// The largest latency (µs) in bucket `i`.
pub(crate) fn upper_us(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let power = (i as u64 - 8) / 8 + 3;
    let sub = (i as u64 - 8) % 8;
    ((8 + sub + 1) << (power - 3)) - 1
}

/// The `q` quantile (0..=1) of `counts` (µs, the top of its bucket: an
/// overestimate by at most 12.5 %); `None` when nothing was counted.
pub(crate) fn quantile(counts: &[u64], q: f64) -> Option<u64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(upper_us(i));
        }
    }
    Some(upper_us(counts.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_lies_in_its_bucket_and_buckets_are_narrow() {
        for us in (0..5_000u64).chain([1 << 20, 123_456_789, u64::from(u32::MAX)]) {
            let b = usize::from(bucket(us));
            assert!(us <= upper_us(b), "{us} in {b}");
            if b > 0 {
                assert!(us > upper_us(b - 1), "{us} above bucket {}", b - 1);
            }
            assert!(upper_us(b) as f64 <= us as f64 * 1.125 + 1.0, "{us}");
        }
        assert_eq!(usize::from(bucket(u64::MAX)), BUCKETS - 1);
    }

    #[test]
    fn percentiles_from_counts() {
        let counts = LatencyCounts::default();
        counts.add_all((1..=100).map(|ms| ms * 1000));
        let snap = counts.snapshot();
        assert_eq!(snap.iter().sum::<u64>(), 100);
        let p50 = quantile(&snap, 0.5).unwrap();
        let p99 = quantile(&snap, 0.99).unwrap();
        assert!((50_000..=56_250).contains(&p50), "{p50}");
        assert!((99_000..=111_375).contains(&p99), "{p99}");
        assert_eq!(quantile(&[0; BUCKETS], 0.5), None);
    }
}
