//! Step 4's words, after the confirmation: what fits (likeliest first, and
//! whether the trace tells the closest apart), what is ruled out and why,
//! whether the user's policy explains the decisions, and the best one as
//! a `--policy` (with `--write`, a starter scenario).

use super::asked::Outcome;
use super::fitting::Trace;
use super::grid::{
    as_good_as_best, decisions, per_second, proof, proof_with, rate_range, TOLD_APART,
};
use super::keys;
use super::probing::Probing;
use super::starter;
use crate::analyze::{fit, predict};
use crate::error::{Error, Exit};
use crate::verify::{self, Obs, Options};

/// What the probe found, to be printed.
pub(super) struct Findings<'t> {
    /// Every candidate of the grid, judged on the fit's trace.
    pub tried: &'t [fit::Tried],
    /// The fits the confirmation left, likeliest first.
    pub fits: Vec<&'t fit::Tried>,
    /// The confirmation's requests.
    pub confirmed: usize,
    pub trace: &'t Trace,
    pub key: Option<&'t keys::Candidate>,
    /// The scale step's first look ([`fit::glance`]).
    pub glance: Option<fit::Glance>,
}

/// Prints the findings; the outcome fails when nothing fits or the
/// user's policy does not explain the decisions.
pub(super) fn report(pr: &mut Probing<'_>, f: &Findings<'_>) -> Result<Outcome, Error> {
    let obs = super::grid::observations_of(&f.trace.events);
    let mut outcome = fits(pr, f, obs.len())?;
    ruled_out(pr, f, &obs)?;
    if let Some(failed) = declared(pr, f, &obs)? {
        outcome = failed;
    }
    best(pr, f)?;
    Ok(outcome)
}

/// The fits, at most five, and whether the trace tells them apart.
fn fits(pr: &mut Probing<'_>, f: &Findings<'_>, judged: usize) -> Result<Outcome, Error> {
    let (fits, epoch_offset) = (&f.fits, f.trace.epoch_offset);
    if fits.is_empty() {
        pr.say(&format!(
            "no policy explains every decision: of {} tried, none leaves 0 definite \
             violations and 0 false rejects — the limiter keeps no policy rlbench knows, or \
             it is several limiters counting apart",
            f.tried.len()
        ))?;
        return Ok(Outcome {
            exit: Exit::GateFailed,
            error: Some("no policy fits the limiter's decisions".into()),
        });
    }
    pr.say(&format!(
        "fits (0 definite violations, 0 false rejects on {} requests), likeliest first \
         (the fewest admits a replay of it gives or refuses otherwise):",
        judged + f.confirmed
    ))?;
    let decided = decisions(&f.trace.events);
    for t in fits.iter().take(5) {
        pr.say(&format!(
            "  {}  (replayed, {} admits off over {} requests; at most {} admits \
             allowed, {} given)",
            t.candidate.describe(),
            predict::disagreements(&t.candidate, &decided, epoch_offset),
            decided.len(),
            t.verdict.allowed_max,
            t.verdict.admitted
        ))?;
    }
    if fits.len() > 5 {
        pr.say(&format!("  … and {} more", fits.len() - 5))?;
    }
    not_told_apart(pr, f)?;
    Ok(Outcome {
        exit: Exit::Passed,
        error: None,
    })
}

/// Fits replaying as well as the likeliest whose long-run rates differ
/// past the probe's precision, the two ends named, with how much longer
/// a probe would need: the limiter may keep any of them.
fn not_told_apart(pr: &mut Probing<'_>, f: &Findings<'_>) -> Result<(), Error> {
    let as_good = as_good_as_best(&f.fits, &f.trace.events, f.trace.epoch_offset);
    let Some((lo, hi)) = rate_range(as_good.iter().copied()) else {
        return Ok(());
    };
    if hi <= lo * TOLD_APART {
        return Ok(());
    }
    let named = |rate: f64| {
        as_good
            .iter()
            .find(|t| per_second(&t.candidate) == rate)
            .map(|t| t.candidate.describe())
            .unwrap_or_default()
    };
    // The bisection halves the ratio's logarithm each steady step, of two
    // of the longest window (2 s to 8 s), and a request timeout.
    let steps = ((hi / lo).ln() / TOLD_APART.ln()).log2().ceil().max(1.0);
    let longest = as_good
        .iter()
        .map(|t| t.candidate.policy.quota().1 as f64 / 1e6)
        .fold(0.0, f64::max)
        .min(60.0);
    let more_s = steps * ((2.0 * longest).clamp(2.0, 8.0) + pr.p.timeout.as_secs_f64());
    pr.say(&format!(
        "not told apart: fits replaying as well as the likeliest allow from {lo:.3} a second \
         ({}) to {hi:.3} a second ({}) \
         over the long run; the proposal is the loosest — a probe about {more_s:.0} s longer \
         (--max-time) tells them apart",
        named(lo),
        named(hi)
    ))
}

/// The nearest miss of each family, with its proof.
fn ruled_out(pr: &mut Probing<'_>, f: &Findings<'_>, obs: &[Obs]) -> Result<(), Error> {
    let misses = fit::nearest_misses(f.tried);
    if misses.is_empty() {
        return Ok(());
    }
    pr.say("ruled out (the nearest of each family, with its proof):")?;
    for t in misses {
        pr.say(&format!(
            "  {}: {} definite violations, {} false rejects — {}",
            t.candidate.describe(),
            t.verdict.definite_violations,
            t.verdict.false_rejects,
            proof(&t.candidate, obs, &f.trace.opts)
        ))?;
    }
    Ok(())
}

/// The user's policy (`--policy`) judged on the fit's trace: the failed
/// outcome when it does not explain the decisions.
fn declared(pr: &mut Probing<'_>, f: &Findings<'_>, obs: &[Obs]) -> Result<Option<Outcome>, Error> {
    let p = pr.p;
    let Some((policy, timing)) = &p.declared else {
        return Ok(None);
    };
    let declared_opts = Options {
        count_rejected: timing.count_rejected,
        lateness_us: timing.lateness_us,
        chunked_refill: timing.chunked_refill,
        chunks_on_epoch: timing.chunks_on_epoch,
        banked_tokens: timing.banked_tokens,
        // The declared resolution and skew, as a run would take them (the
        // probe's target is one rlbench did not start).
        slack_us: crate::app::pipeline::slack::Slack::new(
            timing.clock_resolution_us,
            timing.clock_skew_us,
            timing.one_clock,
            false,
        )
        .total_us(),
        ..f.trace.opts
    };
    let v = verify::verify_key(policy, obs, &declared_opts);
    let c = fit::Candidate {
        policy: policy.clone(),
        count_rejected: timing.count_rejected,
        chunked: timing.chunked_refill,
    };
    if v.definite_violations == 0 && v.false_rejects == 0 {
        pr.say(&format!(
            "your policy ({}) explains every decision",
            c.describe()
        ))?;
        return Ok(None);
    }
    pr.say(&format!(
        "your policy ({}) does not explain the decisions: {} definite violations, \
         {} false rejects — {}",
        c.describe(),
        v.definite_violations,
        v.false_rejects,
        proof_with(policy, obs, &declared_opts)
    ))?;
    // The slowest rate of the fits replaying as well as the likeliest.
    let as_good = as_good_as_best(&f.fits, &f.trace.events, f.trace.epoch_offset);
    if let Some(found) = fit::loosest(&as_good) {
        pr.say(&format!(
            "how the limiter differs from your policy: it keeps {} where you declared {} \
             ({:.3} a second against {:.3} over the long run)",
            found.candidate.describe(),
            c.describe(),
            per_second(&found.candidate),
            per_second(&c)
        ))?;
    }
    if let Some((found, _)) = rate_range(as_good.iter().copied()) {
        let theirs = per_second(&fit::Candidate {
            policy: policy.clone(),
            count_rejected: false,
            chunked: false,
        });
        if found >= 1.5 * theirs {
            pr.say(&format!(
                "the limiter admits at least {:.1}x your rate: several limiters counting \
                 apart (replicas each with its own memory)?",
                found / theirs
            ))?;
        }
    }
    Ok(Some(Outcome {
        exit: Exit::GateFailed,
        error: Some("the policy you gave does not explain the limiter's decisions".into()),
    }))
}

/// The `best:` line — the loosest fit ([`fit::loosest`]) — and with
/// `--write` the starter scenario.
fn best(pr: &mut Probing<'_>, f: &Findings<'_>) -> Result<(), Error> {
    let (events, epoch_offset) = (&f.trace.events, f.trace.epoch_offset);
    let as_good = as_good_as_best(&f.fits, events, epoch_offset);
    let Some(best) = fit::loosest(&as_good) else {
        return Ok(());
    };
    if as_good.len() > 1 {
        pr.say(&format!(
            "the loosest of the {} fits replaying as well as the likeliest (when in doubt, \
             the weaker bound: a stricter one would fail this limiter as it is):",
            as_good.len()
        ))?;
    }
    pr.say(&format!("best: --policy '{}'", best.candidate.inline()))?;
    let p = pr.p;
    let Some(to) = &p.write else {
        return Ok(());
    };
    let limited_seen: Vec<u16> = pr.tally.limited.iter().copied().collect();
    let request = starter::Request {
        urls: p.targets.iter().map(ToString::to_string).collect(),
        method: p.template.method.to_string(),
        headers: p
            .template
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect(),
        force: p.force,
        declared: p.declared_text.clone(),
        tls: p.tls_spec.clone(),
        http2: p.template.http == crate::load::request::Http::H2,
    };
    let (written, catches) = starter::starter(
        &request,
        to,
        f.key,
        &best.candidate,
        f.glance,
        f.trace.span_s,
        &limited_seen,
    )?;
    let w = written.strip_prefix(".").unwrap_or(&written).display();
    pr.say(&catches)?;
    pr.say(&format!("wrote {w}\nnext: rlbench run {w}"))
}
