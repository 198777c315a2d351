//! The proposal is the loosest fit: never slower in long-run rate than any
//! policy that explains every decision — the limiter's own included — and,
//! on vsthrottle's rounding-down bucket, one a steady client under the
//! limiter's rate passes (the false alarm the tightest fit once wrote).

use super::super::*;
use super::{bucket, fixed_window, probe_trace, send, sliding_log};
use crate::verify::{self, Decided, Obs, Options};

/// Varnish's vmod_vsthrottle (`calc_tokens`): a bucket of `capacity`
/// given `capacity` per `period_s`, the tokens earned since the last
/// admit rounded down, and that clock reset on every admit: the partial
/// tokens are lost. Written for this test from the module's description.
fn vsthrottle(capacity: i64, period_s: f64) -> impl FnMut(i64) -> bool {
    let (mut tokens, mut last) = (capacity, 0i64);
    move |t| {
        let delta_s = (t - last) as f64 / 1e6;
        tokens = (tokens + (delta_s / period_s * capacity as f64) as i64).min(capacity);
        let ok = tokens > 0;
        if ok {
            tokens -= 1;
            last = t;
        }
        ok
    }
}

/// A limiter written for these tests: admits the request sent at (µs).
type Limiter = Box<dyn FnMut(i64) -> bool>;

/// The fits of the grid on `obs`.
fn fits_of(obs: &[Obs]) -> Vec<Tried> {
    judge(obs, &Options::default(), candidates(glance(obs).unwrap()))
        .into_iter()
        .filter(Tried::fits)
        .collect()
}

/// Every fit's long-run rate is at most the proposal's, and a fit as fast
/// and of its writing lets no more through at once.
fn holds_the_loosest(tried: &[Tried]) -> &Tried {
    let all: Vec<&Tried> = tried.iter().collect();
    let best = loosest(&all).expect("a fit");
    let rate = long_run_rate(&best.candidate);
    for t in &all {
        let r = long_run_rate(&t.candidate);
        assert!(
            r <= rate * (1.0 + 1e-9),
            "{} ({r}/s) is looser than the proposal {} ({rate}/s)",
            t.candidate.inline(),
            best.candidate.inline()
        );
        if same_rate(r, rate) && same_shape(&t.candidate, &best.candidate) {
            assert!(burst(&t.candidate) <= burst(&best.candidate));
        }
    }
    best
}

#[test]
fn the_proposal_is_never_slower_than_the_truth_whatever_the_limiter() {
    let truths: Vec<(&str, Limiter, f64)> = vec![
        ("sliding log 10/1s", Box::new(sliding_log(10, 1.0)), 10.0),
        ("sliding log 10/2s", Box::new(sliding_log(10, 2.0)), 5.0),
        ("bucket 6 @ 10/s", Box::new(bucket(6.0, 10.0)), 10.0),
        ("fixed 10/1s", Box::new(fixed_window(10, 1.0, 0.3)), 10.0),
        ("vsthrottle 10/2s", Box::new(vsthrottle(10, 2.0)), 5.0),
    ];
    for (name, mut decide, truth_rate) in truths {
        let obs = probe_trace(40.0, &mut *decide);
        let tried = fits_of(&obs);
        let best = holds_the_loosest(&tried);
        assert!(
            long_run_rate(&best.candidate) >= truth_rate * (1.0 - 1e-9),
            "{name}: proposed {}",
            best.candidate.inline()
        );
    }
}

#[test]
fn a_steady_client_under_vsthrottles_rate_passes_the_proposal() {
    let obs = probe_trace(40.0, &mut vsthrottle(10, 2.0));
    let tried = fits_of(&obs);
    let best = holds_the_loosest(&tried).candidate.clone();
    // 4.95 a second for 70 s on a fresh key: vsthrottle admits them all.
    let mut limiter = vsthrottle(10, 2.0);
    let mut steady = Vec::new();
    send(&mut steady, 4.95, 0.0, 70.0, &mut limiter);
    assert!(steady.iter().all(|o| o.decided == Decided::Admitted));
    let v = verify::verify_key(&best.policy, &steady, &best.options(&Options::default()));
    assert_eq!(
        (v.definite_violations, v.false_rejects),
        (0, 0),
        "{} fails a correct vsthrottle",
        best.inline()
    );
    // The tightest fit, as proposed before, fails it: the trap is real.
    let tightest = &fits(&tried)[0].candidate;
    if long_run_rate(tightest) < 4.95 {
        let v = verify::verify_key(
            &tightest.policy,
            &steady,
            &tightest.options(&Options::default()),
        );
        assert!(v.definite_violations > 0, "{}", tightest.inline());
    }
    assert!(tried.len() > 1, "one fit only: nothing to choose between");
}

/// A candidate of `policy` judged to fit.
fn fitting(policy: Policy, chunked: bool) -> Tried {
    let obs = probe_trace(40.0, &mut sliding_log(10, 1.0));
    let mut t = judge(&obs, &Options::default(), candidates(glance(&obs).unwrap()))
        .into_iter()
        .find(Tried::fits)
        .unwrap();
    t.candidate = Candidate {
        policy,
        count_rejected: false,
        chunked,
    };
    t
}

fn bucket_of(capacity: u64, count: u64, per_us: u64) -> Policy {
    Policy::TokenBucket {
        capacity,
        refill: reference_api::Rate { count, per_us },
    }
}

#[test]
fn the_fastest_wins_then_the_likeliest_writing_then_its_largest_burst() {
    let slow = fitting(bucket_of(20, 4, 1_000_000), false);
    let plain6 = fitting(bucket_of(6, 10, 1_000_000), false);
    let plain7 = fitting(bucket_of(7, 10, 1_000_000), false);
    let chunked9 = fitting(bucket_of(9, 5, 500_000), true);
    // The fastest, though last and with the largest burst of all.
    assert_eq!(
        loosest(&[&plain6, &slow]).unwrap().candidate,
        plain6.candidate
    );
    // As fast: the first given's writing, not the other writing's larger
    // burst; within it, the larger burst.
    let got = loosest(&[&plain6, &chunked9, &plain7]).unwrap();
    assert_eq!(got.candidate, plain7.candidate);
    let got = loosest(&[&chunked9, &plain6, &plain7]).unwrap();
    assert_eq!(got.candidate, chunked9.candidate);
    // The same rate written two ways (10/1s, 600/1m) is as fast.
    let log = fitting(
        Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        },
        false,
    );
    let minute = fitting(
        Policy::SlidingLog {
            limit: 600,
            window_us: 60_000_000,
        },
        false,
    );
    assert_eq!(
        loosest(&[&log, &minute]).unwrap().candidate,
        minute.candidate
    );
    assert!(loosest(&[]).is_none());
}
