//! Correct limiters: one test per limiter, each over the four kinds of case
//! ([`cases`] seeds each), plus on every 8th case a limiter one off from it.

use super::*;

#[test]
fn correct_sliding_log_in_memory() {
    correct_limiter(Algo::LogMemory, cases());
}

#[test]
fn correct_sliding_log_redis_sorted_set() {
    correct_limiter(Algo::LogZset, cases());
}

#[test]
fn correct_fixed_window_epoch_aligned() {
    correct_limiter(Algo::FixedEpoch, cases());
}

#[test]
fn correct_fixed_window_redis_key_per_window() {
    correct_limiter(Algo::FixedKeyed, cases());
}

#[test]
fn correct_fixed_window_anchored_at_first_hit() {
    correct_limiter(Algo::FixedAnchored, cases());
}

#[test]
fn correct_segmented_window_epoch_aligned() {
    correct_limiter(Algo::SegEpoch, cases());
}

#[test]
fn correct_segmented_window_redis_key_per_segment() {
    correct_limiter(Algo::SegKeyed, cases());
}

#[test]
fn correct_sliding_counter_redis_key_per_window() {
    correct_limiter(Algo::CounterKeyed, cases());
}

#[test]
fn correct_sliding_counter_estimate_below_limit() {
    correct_limiter(Algo::CounterLt, cases());
}

#[test]
fn correct_sliding_counter_estimate_plus_one_within_limit() {
    correct_limiter(Algo::CounterLe, cases());
}

#[test]
fn correct_token_bucket() {
    correct_limiter(Algo::Bucket, cases());
}

#[test]
fn correct_token_bucket_in_floating_point() {
    correct_limiter(Algo::BucketFloat, cases());
}

#[test]
fn correct_sliding_counter_in_floating_point() {
    correct_limiter(Algo::CounterFloat, cases());
}

#[test]
fn correct_gcra() {
    correct_limiter(Algo::Gcra, cases());
}

#[test]
fn correct_aspnet_fixed_window_late_heartbeat() {
    correct_limiter(Algo::AspFixed, cases());
}

#[test]
fn correct_aspnet_segmented_window_late_heartbeat() {
    correct_limiter(Algo::AspSeg, cases());
}

#[test]
fn correct_aspnet_token_bucket_late_heartbeat() {
    correct_limiter(Algo::AspBucket, cases());
}

#[test]
fn correct_aspnet_token_bucket_as_released() {
    correct_limiter(Algo::AspReleased, cases());
}

#[test]
fn correct_aspnet_token_bucket_exact_timer() {
    correct_limiter(Algo::ChunkedTimer, cases());
}

#[test]
fn correct_sliding_log_counting_every_attempt() {
    correct_limiter(Algo::LogAttempts, cases());
}

#[test]
fn correct_segmented_window_counting_every_attempt() {
    correct_limiter(Algo::SegAttempts, cases());
}

#[test]
fn correct_haproxy_like_counter_counting_every_attempt() {
    correct_limiter(Algo::CounterAttempts, cases());
}

#[test]
fn correct_token_bucket_in_chunks_on_the_epoch() {
    correct_limiter(Algo::ChunkEpoch, cases());
}

#[test]
fn correct_token_bucket_in_chunks_from_the_first_hit() {
    correct_limiter(Algo::ChunkFirstHit, cases());
}
