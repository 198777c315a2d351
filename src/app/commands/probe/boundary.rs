//! The fit's last rounds, when its likeliest fit is a window another
//! window family could pass for. Saturation admits a window's limit at
//! each window's start, fixed or sliding alike, and evenly spaced requests
//! age out of a sliding log as evenly as they came. Each round here rests
//! a window, spreads a limit and two over half a window, then sends as
//! many within a twentieth of one, 1.02 windows after the slow ones began:
//! a fixed window (anchored at the first hit or at any boundary) admits
//! its whole limit there at once, where a sliding one frees only what aged.

use super::fitting::{Fitting, CONFIRM_TIME};
use super::grid::{boundary_test, likeliest};
use super::probing::Probing;
use std::time::Duration;
use tokio::time::Instant;

/// Up to three boundary rounds while the budget lasts, then the grid
/// judged again.
pub(super) async fn boundary(pr: &mut Probing<'_>, f: &mut Fitting) {
    let boundary = f
        .judged
        .as_deref()
        .and_then(|t| boundary_test(&likeliest(t, &f.events, f.epoch_offset)));
    let Some((limit, window)) = boundary else {
        return;
    };
    let count = limit + 2;
    let slow = count as f64 / window.mul_f64(0.5).as_secs_f64();
    let fast = count as f64 / window.mul_f64(0.05).as_secs_f64();
    for _ in 0..3 {
        let need = window.mul_f64(2.1) + pr.p.timeout;
        if pr.interrupt.fired()
            || pr.budget.time_left() < need + CONFIRM_TIME + f.keep_back
            || !pr.budget.allows(2 * count, slow)
        {
            break;
        }
        pr.rest(window).await;
        let began = Instant::now();
        for (rate, at) in [(slow, Duration::ZERO), (fast, window.mul_f64(1.02))] {
            pr.rest_until(began + at).await;
            let phase = f.phase(pr, rate, count);
            let s = pr.send(phase, f.start).await;
            f.events.extend(s.events);
        }
    }
    f.rejudge(pr.p.timeout);
}
