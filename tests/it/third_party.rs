//! The real limiters of real_limiters.rs, one test each: PyPI `limits`
//! (its three strategies) and npm rate-limiter-flexible exact twice in a
//! row on one process and caught on several, and HAProxy's stick table
//! the same — judged as admits-only, its correct answers are false
//! rejects.

use crate::real_limiters::{
    exact_twice_in_a_row, fake_global_is_caught, run, scenario_on, start, Limiter,
};

#[test]
fn limits_moving_window_is_exact_twice_in_a_row() {
    exact_twice_in_a_row(
        Limiter::Limits("moving-window"),
        "limits.toml",
        "moving-window",
    );
}

#[test]
fn limits_moving_window_on_two_processes_is_a_fake_global() {
    fake_global_is_caught(
        Limiter::Limits("moving-window"),
        "limits.toml",
        "moving-window-two",
        2,
        1.5,
    );
}

#[test]
fn limits_sliding_window_counter_is_exact_twice_in_a_row() {
    exact_twice_in_a_row(
        Limiter::Limits("sliding-window-counter"),
        "limits.toml",
        "sliding-window-counter",
    );
}

#[test]
fn limits_sliding_window_counter_on_two_processes_is_a_fake_global() {
    fake_global_is_caught(
        Limiter::Limits("sliding-window-counter"),
        "limits.toml",
        "sliding-window-counter-two",
        2,
        1.2,
    );
}

#[test]
fn limits_fixed_window_is_exact_twice_in_a_row() {
    exact_twice_in_a_row(
        Limiter::Limits("fixed-window"),
        "limits.toml",
        "fixed-window",
    );
}

/// Three, not two: two fixed windows of N never admit more than 2N within
/// one window's length, and with the alignment unknown only more than 2N
/// is provably wrong.
#[test]
fn limits_fixed_window_on_three_processes_is_a_fake_global() {
    fake_global_is_caught(
        Limiter::Limits("fixed-window"),
        "limits.toml",
        "fixed-window-three",
        3,
        1.5,
    );
}

#[test]
fn rate_limiter_flexible_memory_is_exact_twice_in_a_row() {
    exact_twice_in_a_row(Limiter::Flexible, "rate-limiter-flexible.toml", "memory");
}

/// Three, not two: see the fixed window above.
#[test]
fn rate_limiter_flexible_memory_on_three_processes_is_a_fake_global() {
    fake_global_is_caught(
        Limiter::Flexible,
        "rate-limiter-flexible.toml",
        "memory-three",
        3,
        1.5,
    );
}

#[test]
fn haproxy_stick_table_is_exact_twice_in_a_row() {
    exact_twice_in_a_row(Limiter::Haproxy, "haproxy.toml", "one-process");
}

#[test]
fn haproxy_on_two_processes_is_a_fake_global() {
    // Caught by its admits (2N within a window); no over-admission ratio is
    // asserted: denied requests count, so a flood that stays denied says
    // little about how many admits any correct limiter could give.
    fake_global_is_caught(Limiter::Haproxy, "haproxy.toml", "two-processes", 2, 0.0);
}

/// Without `count_rejected`, HAProxy's correct answers look like a limiter
/// that refuses with room to spare: its denied requests count, so a client
/// sending 4× the limit stays limited.
#[test]
fn haproxy_judged_as_counting_admits_only_is_all_false_rejects() {
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Haproxy, logs.path());
    let scenario = scenario_on("haproxy.toml", "one-process", &[&server])
        .replace("count_rejected = true", "count_rejected = false");
    let r = run(&scenario, "one-process");
    let c = &r.arm("one-process")["correctness"];
    let stdout = r.stdout();
    assert_eq!(c["definite_violations"], 0, "{stdout}");
    assert!(
        c["false_rejects"].as_u64().unwrap() > 100,
        "a correct HAProxy judged as admits-only\n{stdout}"
    );
    assert_eq!(
        r.out.status.code(),
        Some(1),
        "max_false_reject_ratio = 0 fails"
    );
    // The keys it keeps shut are named, with the reading that fits
    // (refusals counted), not a question about the key header.
    assert!(
        stdout.contains("were refused without a break for up to"),
        "{stdout}"
    );
    assert!(stdout.contains("(`count_rejected = true`)"), "{stdout}");
    assert!(!stdout.contains("does your limiter key on"), "{stdout}");
    let keys = &r.arm("one-process")["keys"]["stuck"];
    assert!(keys["keys"].as_u64().unwrap() >= 1, "{keys}");
    assert!(
        keys["named"][0].as_str().unwrap().starts_with("customer-"),
        "{keys}"
    );
}
