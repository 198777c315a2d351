//! `rlbench probe URL`: finds, from outside and within a printed budget
//! of requests and time, what a limiter keys on and which policy explains
//! its every decision, with the verifier itself as the judge. Four steps,
//! each a bounded open-loop load to this machine only:
//!
//! 1. scale: one fixed caller at 20, then 100, then 500 requests/s for a
//!    second until a fifth of the answers are limited;
//! 2. keys: a baseline with every candidate fixed, then one phase per
//!    candidate sent fresh in each request ([`keys`]): the candidate whose
//!    phase lost the limited answers is the key;
//! 3. fit: one fresh caller saturated, rested and saturated again, the
//!    rests doubling while the window is not pinned and the budget lasts;
//! 4. judge: every policy of the grid against that trace ([`fit`]); what
//!    fits, what is ruled out and why, the best one as `[policy]` lines
//!    (and, with `--write`, a starter scenario).

use crate::analyze::{fit, predict};
pub(crate) mod keys;

mod send;
mod starter;

use crate::error::{Error, Exit};
use crate::events::Event;
use crate::interrupt::Interrupt;
use crate::load::request::Template;
use crate::scenario::PolicyTiming;
use crate::verify::{self, Obs, Options};
use hyper::header::HeaderName;
use hyper::Uri;
use reference_api::Policy;
use send::{Phase, Sent};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;
use tokio::time::Instant;

/// What `rlbench probe` was asked for, checked.
#[derive(Debug)]
pub(crate) struct Probe {
    pub targets: Vec<Uri>,
    /// Method, the user's headers, the statuses that mean "limited".
    pub template: Template,
    /// Headers to try as the key before the common ones (`--key-header`).
    pub key_headers: Vec<HeaderName>,
    /// The policy the user believes in (`--policy`), judged beside the fit.
    pub declared: Option<(Policy, PolicyTiming)>,
    pub max_requests: u64,
    pub max_time: Duration,
    pub timeout: Duration,
    /// `--write NAME`: a starter scenario with what was found.
    pub write: Option<String>,
    pub force: bool,
    /// Where its lines fold ([`crate::report::fold::width`]).
    pub columns: Option<usize>,
}

/// What the probe ends with.
pub(crate) struct Outcome {
    pub exit: Exit,
    /// One line for standard error when it did not find a policy.
    pub error: Option<String>,
}

/// Rates the scale step tries, requests per second.
const SCALE: &[f64] = &[20.0, 100.0, 500.0];
/// The key phases and the fit send at most this fast.
const MAX_RATE: f64 = 1_000.0;
/// The fit leaves this much of the time for the confirmation.
const CONFIRM_TIME: Duration = Duration::from_secs(10);

/// The requests that check whether a target answers requests carrying
/// the query candidates.
const QUERY_CHECK: u64 = 3;

/// What is left of the budget.
struct Budget {
    requests: u64,
    deadline: Instant,
    timeout: Duration,
}

impl Budget {
    /// Whether `count` requests at `rate` (and their answers) fit.
    fn allows(&self, count: u64, rate: f64) -> bool {
        let time = Duration::from_secs_f64(count as f64 / rate) + self.timeout;
        count <= self.requests && Instant::now() + time <= self.deadline
    }

    fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

fn line(out: &mut dyn Write, text: &str) -> Result<(), Error> {
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::environment(format!("cannot write to standard output: {e}")))
}

/// Standard output with the probe's lines folded at `columns` (each line
/// is written whole, then flushed), but for the `best:` line: it is to be
/// copied as it is.
struct Folded<'a> {
    out: &'a mut dyn Write,
    columns: Option<usize>,
    pending: Vec<u8>,
}

impl Write for Folded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        let text = match self.columns {
            Some(w) if !text.starts_with("best: ") => crate::report::fold::fold(&text, w),
            _ => text,
        };
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

/// Runs the probe, printing as it goes.
pub(crate) async fn run(
    p: &Probe,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    crate::target::reachable(&p.targets).await?;
    let out = &mut Folded {
        out,
        columns: p.columns,
        pending: Vec::new(),
    };
    let urls: Vec<String> = p.targets.iter().map(|u| u.to_string()).collect();
    line(
        out,
        &format!(
            "probing {}: at most {} requests in at most {} s, to this machine only",
            urls.join(", "),
            p.max_requests,
            p.max_time.as_secs()
        ),
    )?;
    let origin = Instant::now();
    let mut budget = Budget {
        requests: p.max_requests,
        deadline: origin + p.max_time,
        timeout: p.timeout,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let nonce = format!("rlbench-probe-{:x}", now.as_micros() & 0xff_ffff);
    let v4 = p.targets.iter().all(|u| {
        let host = u.host().unwrap_or_default();
        host == "localhost" || host.parse::<std::net::Ipv4Addr>().is_ok()
    });
    let sent_headers: Vec<HeaderName> = p.template.headers.keys().cloned().collect();
    let mut all = keys::candidates(&p.key_headers, &sent_headers, &p.targets, v4);
    let mut phase_no: u8 = 0;
    let mut next_tag = || {
        phase_no += 1;
        (format!("{nonce}-{phase_no}"), phase_no)
    };
    let mut tally = Tally::default();
    // The query candidates ride in every URL: a target that answers no
    // request carrying them (a server routing on the whole request
    // target, one refusing unknown parameters) gets none.
    let queries: Vec<String> = all
        .iter()
        .filter(|c| matches!(c, keys::Candidate::Query(_)))
        .map(keys::Candidate::name)
        .collect();
    if !queries.is_empty() {
        let (tag, no) = next_tag();
        let s = send::send(
            Phase {
                targets: keys::targets(&p.targets, &all, None, &tag),
                template: keys::template(&p.template, &all, None, &tag, no, 1),
                rate: QUERY_CHECK as f64 * 10.0,
                count: QUERY_CHECK,
                keys: 1,
                timeout: p.timeout,
            },
            origin,
            interrupt,
        )
        .await;
        spend(&mut budget, &s, &mut tally);
        if s.decided() == 0 {
            all.retain(|c| !matches!(c, keys::Candidate::Query(_)));
            line(
                out,
                &format!(
                    "  keys: {} not tried: no request carrying them got a decision ({})",
                    queries.join(", "),
                    counted(&status_counts(&s.events))
                ),
            )?;
        }
    }
    let all = all;
    // A phase's template and URLs: `fresh` (if any) new in every request,
    // every other candidate fixed at this phase's `tag`.
    let sending = |fresh: Option<&keys::Candidate>, tag: &str, no: u8, keys: u32| {
        (
            keys::template(&p.template, &all, fresh, tag, no, keys),
            keys::targets(&p.targets, &all, fresh, tag),
        )
    };
    let phase =
        |(template, targets): (Template, Vec<Uri>), rate: f64, count: u64, keys: u32| Phase {
            targets,
            template,
            rate,
            count,
            keys,
            timeout: p.timeout,
        };

    // 1. Scale.
    let mut scale: Option<(f64, Sent)> = None;
    for &rate in SCALE {
        let count = rate as u64;
        if !budget.allows(count, rate) {
            break;
        }
        let (tag, no) = next_tag();
        let t = sending(None, &tag, no, 1);
        let s = send::send(phase(t, rate, count, 1), origin, interrupt).await;
        spend(&mut budget, &s, &mut tally);
        if s.interrupted {
            return Ok(interrupted());
        }
        line(
            out,
            &format!(
                "  scale: {} requests at {rate:.0}/s, one caller: {} limited, {} admitted",
                s.events.len(),
                s.limited(),
                s.admitted()
            ),
        )?;
        if s.decided() == 0 {
            return Err(Error::environment(format!(
                "none of {} requests got a decision ({}): check the URL and the method, \
                 and --limited-status if the limiter answers other than {}",
                s.events.len(),
                counted(&tally.statuses),
                limited_list(&p.template.limited)
            )));
        }
        if s.limited_share() >= 0.2 {
            scale = Some((rate, s));
            break;
        }
    }
    let Some((rate, scaled)) = scale else {
        let line_text = format!(
            "nothing was limited: {} requests at up to {:.0}/s ({}); the URL may not be \
             behind the limiter, or its limit is above what the probe sends (--max-requests)",
            tally.sent,
            SCALE[SCALE.len() - 1],
            counted(&tally.statuses)
        );
        line(out, &line_text)?;
        return Ok(Outcome {
            exit: Exit::GateFailed,
            error: Some("the probe found no limit".into()),
        });
    };

    // 2. Keys.
    let key_rate = (rate * 2.0).min(MAX_RATE);
    let key_count = ((3 * scaled.admitted() + 10) as f64)
        .min(key_rate)
        .max(10.0) as u64;
    let (tag, no) = next_tag();
    let t = sending(None, &tag, no, 1);
    let baseline = send::send(phase(t, key_rate, key_count, 1), origin, interrupt).await;
    spend(&mut budget, &baseline, &mut tally);
    let base_share = baseline.limited_share();
    line(
        out,
        &format!(
            "  keys: every candidate fixed: {} of {} limited",
            baseline.limited(),
            baseline.events.len()
        ),
    )?;
    let mut shares = Vec::new();
    for c in &all {
        if interrupt.fired() || !budget.allows(key_count, key_rate) {
            line(
                out,
                &format!("  keys: the budget ends before {} is tried", c.name()),
            )?;
            break;
        }
        let (tag, no) = next_tag();
        let fresh_keys = (key_count * 20).min(60_000) as u32;
        let t = sending(Some(c), &tag, no, fresh_keys);
        let s = send::send(phase(t, key_rate, key_count, fresh_keys), origin, interrupt).await;
        spend(&mut budget, &s, &mut tally);
        let undecided = s.events.len() as u64 - s.decided();
        let note = if s.decided() * 2 < s.events.len() as u64 {
            format!(
                " — {undecided} without a decision ({}): not judged",
                counted(&status_counts(&s.events))
            )
        } else {
            String::new()
        };
        line(
            out,
            &format!(
                "  keys: {} fresh in every request: {} of {} limited{note}",
                c.name(),
                s.limited(),
                s.events.len()
            ),
        )?;
        if s.decided() * 2 >= s.events.len() as u64 {
            shares.push((c.clone(), s.limited_share()));
        }
    }
    if interrupt.fired() {
        return Ok(interrupted());
    }
    let moved = keys::moved(base_share, &shares);
    let key = moved.first().cloned();
    match (&key, moved.len()) {
        (Some(k), 1) => line(
            out,
            &format!("key: {} (it alone moved the limits)", k.name()),
        )?,
        (Some(k), _) => line(
            out,
            &format!(
                "key: {} — and {} moved the limits too: the limiter may key on them together",
                k.name(),
                moved[1..]
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )?,
        (None, _) => line(
            out,
            "key: none of the candidates moved the limits: every caller may share one bucket, \
             or the key is something not tried (--key-header NAME tries a header)",
        )?,
    }

    // 3. Fit.
    let fit_start = Instant::now();
    let (tag, no) = next_tag();
    // One caller new to the limiter: every candidate fixed at this
    // phase's values, and a path key (whose fixed value is the URL's own,
    // the same in every phase) as this phase's own path.
    let path_key = key
        .as_ref()
        .filter(|k| matches!(k, keys::Candidate::Path { .. }));
    let fit_template = sending(path_key, &tag, no, 1);
    let g = fit::glance(&observations_of(&scaled.events));
    let fit_rate = key_rate;
    let saturate = if g.is_some_and(|g| g.per_second > 0.0) {
        2.0
    } else {
        3.0
    };
    let mut events: Vec<Event> = Vec::new();
    let mut samples = vec![crate::load::clocks::sample(fit_start)];
    let epoch_offset = samples[0].wall_us - samples[0].trace_us;
    let count = ((fit_rate * saturate) as u64)
        .min(budget.requests / 2)
        .max(1);
    let s = send::send(
        phase(fit_template.clone(), fit_rate, count, 1),
        fit_start,
        interrupt,
    )
    .await;
    spend(&mut budget, &s, &mut tally);
    events.extend(s.events);
    samples.push(crate::load::clocks::sample(fit_start));
    let mut opts = options(key.is_none(), p.timeout, &samples);
    // The grid comes from the first saturation alone (the rests would
    // thin its admits per second).
    let seen = fit::glance(&observations_of(&events));
    let burst = (scaled.admitted() + 10).min(fit_rate as u64);
    let rest = Duration::from_secs_f64(saturate / 2.0);
    // Judging the grid takes time too (longer on a busy machine, and the
    // next judging is on more requests): the longest one so far is kept
    // back, twice, from the rounds beside the confirmation's time.
    let mut judging = Duration::ZERO;
    let mut judge_timed = |events: &[Event], opts: &Options| {
        let began = Instant::now();
        let judged = judge(events, seen, opts);
        judging = judging.max(began.elapsed());
        (judged, judging * 2)
    };
    let (mut judged, mut keep_back) = judge_timed(&events, &opts);
    // One rest and saturation again (it tells a refill from a window);
    // then, while the closest fits disagree on the long-run rate, a steady
    // phase at the middle of their rates (geometric): a policy slower than
    // it is caught admitting too much, one faster refusing what it allows
    // — a bisection on the rate, each step proven by the verifier.
    let mut round = 0;
    let mut tried_rates: Vec<f64> = Vec::new();
    let (mut admitted_at, mut refused_at): (Option<f64>, Option<f64>) = (None, None);
    while !interrupt.fired() && judged.is_some() {
        let (wait, rate, count) = if round == 0 {
            (
                rest,
                fit_rate,
                burst.max((rest.as_secs_f64() * fit_rate) as u64),
            )
        } else {
            let Some((mid, longest)) = judged.as_deref().and_then(disagreement) else {
                break;
            };
            // The next rate from what the limiter did: up by doubling
            // while it admits a steady load whole, then a bisection
            // between the fastest it admitted and the slowest it refused
            // (the verifier turns each step into proofs; this only picks
            // where to look).
            let mid = match (admitted_at, refused_at) {
                // Not slower than the fit's admits so far came: a
                // saturated limiter admits about its rate, so a first
                // step from the fits' slow end (1 a second against
                // HAProxy's 10) would spend the budget crawling up.
                (None, None) => mid.max(admits_per_second(&events)),
                (Some(a), None) => a * 2.0,
                (None, Some(r)) => r / 2.0,
                (Some(a), Some(r)) if r / a < 1.2 => break,
                (Some(a), Some(r)) => (a * r).sqrt(),
            };
            // At least 1 a second: slower steps tell little in the time.
            let mid = mid.max(1.0);
            if round > 8
                || tried_rates
                    .iter()
                    .any(|r: &f64| (r / mid - 1.0).abs() < 0.05)
            {
                break;
            }
            tried_rates.push(mid);
            let secs = (2.0 * longest).clamp(2.0, 8.0);
            (Duration::ZERO, mid, (mid * secs) as u64)
        };
        round += 1;
        let need = wait + Duration::from_secs_f64(count as f64 / rate) + p.timeout;
        if count < 3
            || budget.time_left() < need + CONFIRM_TIME + keep_back
            || !budget.allows(count, rate)
        {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = interrupt.wait() => {}
        }
        let s = send::send(
            phase(fit_template.clone(), rate, count, 1),
            fit_start,
            interrupt,
        )
        .await;
        line(
            out,
            &format!(
                "  fit: {count} requests at {rate:.2}/s after {:.1} s at rest: {} limited",
                wait.as_secs_f64(),
                s.limited()
            ),
        )?;
        if round > 1 {
            // Judged on its second half: the refusals at its start may be
            // the saturation before it still counted (a limiter counting
            // rejects remembers them for a window).
            let mut sent: Vec<&Event> = s.events.iter().collect();
            sent.sort_by_key(|e| e.sent_us);
            let late = &sent[sent.len() / 2..];
            let refused = late
                .iter()
                .filter(|e| e.outcome == crate::events::Outcome::Rejected)
                .count() as u64;
            if refused <= (late.len() as u64 / 10).max(1) {
                admitted_at = Some(admitted_at.map_or(rate, |a: f64| a.max(rate)));
            } else {
                refused_at = Some(refused_at.map_or(rate, |r: f64| r.min(rate)));
            }
        }
        spend(&mut budget, &s, &mut tally);
        events.extend(s.events);
        samples.push(crate::load::clocks::sample(fit_start));
        opts = options(key.is_none(), p.timeout, &samples);
        (judged, keep_back) = judge_timed(&events, &opts);
    }
    // Saturation admits a window's limit at each window's start, fixed or
    // sliding alike, and evenly spaced requests age out of a sliding log
    // as evenly as they came. Each round here rests a window, spreads a
    // limit and two over half a window, then sends as many within a
    // twentieth of one, 1.02 windows after the slow ones began: a fixed
    // window (anchored at the first hit or at any boundary) admits its
    // whole limit there at once, where a sliding one frees only what aged.
    let boundary = judged
        .as_deref()
        .and_then(|t| boundary_test(&likeliest(t, &events, epoch_offset)));
    if let Some((limit, window)) = boundary {
        let count = limit + 2;
        let slow = count as f64 / window.mul_f64(0.5).as_secs_f64();
        let fast = count as f64 / window.mul_f64(0.05).as_secs_f64();
        for _ in 0..3 {
            let need = window.mul_f64(2.1) + p.timeout;
            if interrupt.fired()
                || budget.time_left() < need + CONFIRM_TIME + keep_back
                || !budget.allows(2 * count, slow)
            {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(window) => {}
                () = interrupt.wait() => {}
            }
            let began = Instant::now();
            for (rate, at) in [(slow, Duration::ZERO), (fast, window.mul_f64(1.02))] {
                tokio::select! {
                    () = tokio::time::sleep_until(began + at) => {}
                    () = interrupt.wait() => {}
                }
                let s = send::send(
                    phase(fit_template.clone(), rate, count, 1),
                    fit_start,
                    interrupt,
                )
                .await;
                spend(&mut budget, &s, &mut tally);
                events.extend(s.events);
            }
        }
        samples.push(crate::load::clocks::sample(fit_start));
        opts = options(key.is_none(), p.timeout, &samples);
        (judged, _) = judge_timed(&events, &opts);
    }
    if interrupt.fired() {
        return Ok(interrupted());
    }
    let span_s = events.iter().map(|e| e.done_us).max().unwrap_or(0) as f64 / 1e6;
    line(
        out,
        &format!(
            "  fit: {} requests over {span_s:.1} s, one fresh caller: {} limited ({} \
             requests in all)",
            events.len(),
            events
                .iter()
                .filter(|e| e.outcome == crate::events::Outcome::Rejected)
                .count(),
            tally.sent
        ),
    )?;

    // 4. Judge.
    let obs = observations_of(&events);
    let Some(tried) = judged else {
        line(
            out,
            "the fresh caller was not limited: nothing to fit (the limit moved during the probe?)",
        )?;
        return Ok(Outcome {
            exit: Exit::GateFailed,
            error: Some("the probe found no policy to fit".into()),
        });
    };
    let mut fits = likeliest(&tried, &events, epoch_offset);
    // 5. Confirm: the starter's own load (its keys, its rate) for a few
    // seconds on fresh keys, each key's trace judged under every fit;
    // what a run of the starter would disprove goes now, not in the
    // user's first run.
    let mut confirmed = 0usize;
    if let Some(best) = fits.first() {
        let load = starter::starter_load(&best.candidate, g, key.is_some());
        let window_s = best.candidate.policy.quota().1 as f64 / 1e6;
        let secs = (3.0 * window_s).clamp(3.0, 8.0);
        let rate = load.rate as f64;
        let count = ((rate * secs) as u64).min(budget.requests);
        if interrupt.fired() || count < load.rate || !budget.allows(count, rate) {
            line(
                out,
                "  confirm: the budget ends before the starter's load is tried (--max-time)",
            )?;
        } else {
            let (tag, no) = next_tag();
            let t = sending(key.as_ref(), &tag, no, load.keys);
            let s = send::send(phase(t, rate, count, load.keys), fit_start, interrupt).await;
            spend(&mut budget, &s, &mut tally);
            if s.interrupted {
                return Ok(interrupted());
            }
            let mut by_key: BTreeMap<&str, Vec<Event>> = BTreeMap::new();
            for e in &s.events {
                by_key.entry(e.key.as_str()).or_default().push(e.clone());
            }
            let before = fits.len();
            let traces: Vec<Vec<Obs>> = by_key.values().map(|e| observations_of(e)).collect();
            fits.retain(|t| {
                let opts = t.candidate.options(&opts);
                traces.iter().all(|obs| {
                    let v = verify::verify_key(&t.candidate.policy, obs, &opts);
                    v.definite_violations == 0 && v.false_rejects == 0
                })
            });
            // Ranked again on every trace's replays.
            let decided: Vec<Vec<(i64, bool)>> = std::iter::once(decisions(&events))
                .chain(by_key.values().map(|e| decisions(e)))
                .collect();
            fits = fit::rerank(fits, &|c| {
                decided
                    .iter()
                    .map(|d| predict::disagreements(c, d, epoch_offset))
                    .sum()
            });
            confirmed = s.events.len();
            line(
                out,
                &format!(
                    "  confirm: {} requests at {rate:.0}/s over {} fresh key{}, as the starter \
                     sends them: {} of {before} fits left",
                    s.events.len(),
                    load.keys,
                    if load.keys == 1 { "" } else { "s" },
                    fits.len()
                ),
            )?;
        }
    }
    let mut exit = Exit::Passed;
    let mut error = None;
    if fits.is_empty() {
        line(
            out,
            &format!(
                "no policy explains every decision: of {} tried, none leaves 0 definite \
                 violations and 0 false rejects — the limiter keeps no policy rlbench knows, or \
                 it is several limiters counting apart",
                tried.len()
            ),
        )?;
        exit = Exit::GateFailed;
        error = Some("no policy fits the limiter's decisions".into());
    } else {
        line(
            out,
            &format!(
                "fits (0 definite violations, 0 false rejects on {} requests), likeliest first \
                 (the fewest admits a replay of it gives or refuses otherwise):",
                obs.len() + confirmed
            ),
        )?;
        let decided = decisions(&events);
        for t in fits.iter().take(5) {
            line(
                out,
                &format!(
                    "  {}  (replayed, {} admits off over {} requests; at most {} admits \
                     allowed, {} given)",
                    t.candidate.describe(),
                    predict::disagreements(&t.candidate, &decided, epoch_offset),
                    decided.len(),
                    t.verdict.allowed_max,
                    t.verdict.admitted
                ),
            )?;
        }
        if fits.len() > 5 {
            line(out, &format!("  … and {} more", fits.len() - 5))?;
        }
        // The fits whose replays are as good as the best one's: the trace
        // does not tell them apart.
        let wrong = |t: &fit::Tried| predict::disagreements(&t.candidate, &decided, epoch_offset);
        let slack = fit::as_good(wrong(fits[0]));
        let rates: Vec<f64> = fits
            .iter()
            .filter(|t| wrong(t) <= slack)
            .map(|t| per_second(&t.candidate))
            .collect();
        let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rates.iter().copied().fold(0.0, f64::max);
        if hi > lo * 1.5 {
            line(
                out,
                &format!(
                    "not told apart: fits replaying as well as the best allow from {lo:.3} to \
                     {hi:.3} a second over the long run; the probe ran {span_s:.0} s — a longer \
                     --max-time tells them apart"
                ),
            )?;
        }
    }
    let misses = fit::nearest_misses(&tried);
    if !misses.is_empty() {
        line(
            out,
            "ruled out (the nearest of each family, with its proof):",
        )?;
        for t in misses {
            line(
                out,
                &format!(
                    "  {}: {} definite violations, {} false rejects — {}",
                    t.candidate.describe(),
                    t.verdict.definite_violations,
                    t.verdict.false_rejects,
                    proof(&t.candidate, &obs, &opts)
                ),
            )?;
        }
    }
    if let Some((policy, timing)) = &p.declared {
        let declared_opts = Options {
            count_rejected: timing.count_rejected,
            lateness_us: timing.lateness_us,
            chunked_refill: timing.chunked_refill,
            chunks_on_epoch: timing.chunks_on_epoch,
            ..opts
        };
        let v = verify::verify_key(policy, &obs, &declared_opts);
        let c = fit::Candidate {
            policy: policy.clone(),
            count_rejected: timing.count_rejected,
            chunked: timing.chunked_refill,
        };
        if v.definite_violations == 0 && v.false_rejects == 0 {
            line(
                out,
                &format!("your policy ({}) explains every decision", c.describe()),
            )?;
        } else {
            line(
                out,
                &format!(
                    "your policy ({}) does not explain the decisions: {} definite violations, \
                     {} false rejects — {}",
                    c.describe(),
                    v.definite_violations,
                    v.false_rejects,
                    proof_with(policy, &obs, &declared_opts)
                ),
            )?;
            if let Some(best) = fits.first() {
                let theirs = per_second(&fit::Candidate {
                    policy: policy.clone(),
                    count_rejected: false,
                    chunked: false,
                });
                let found = per_second(&best.candidate);
                if found >= 1.5 * theirs {
                    line(
                        out,
                        &format!(
                            "the limiter admits {:.1}x your rate: several limiters counting \
                             apart (replicas each with its own memory)?",
                            found / theirs
                        ),
                    )?;
                }
            }
            exit = Exit::GateFailed;
            error = Some("the policy you gave does not explain the limiter's decisions".into());
        }
    }
    if let Some(best) = fits.first() {
        line(
            out,
            &format!("best: --policy '{}'", best.candidate.inline()),
        )?;
        if let Some(name) = &p.write {
            let limited_seen: Vec<u16> = tally.limited.iter().copied().collect();
            let request = starter::Request {
                url: p.targets[0].to_string(),
                method: p.template.method.to_string(),
                headers: p
                    .template
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
                    .collect(),
                force: p.force,
            };
            let written = starter::starter(
                &request,
                name,
                key.as_ref(),
                &best.candidate,
                g,
                span_s,
                &limited_seen,
            )?;
            let w = written.strip_prefix(".").unwrap_or(&written).display();
            line(out, &format!("wrote {w}\nnext: rlbench run {w}"))?;
        }
    }
    Ok(Outcome { exit, error })
}

fn interrupted() -> Outcome {
    Outcome {
        exit: Exit::Interrupted,
        error: Some("interrupted; nothing was concluded".into()),
    }
}

/// What the probe has sent and what came back.
#[derive(Default)]
struct Tally {
    sent: u64,
    statuses: BTreeMap<u16, u64>,
    /// The statuses of the limited answers.
    limited: std::collections::BTreeSet<u16>,
}

fn spend(budget: &mut Budget, s: &Sent, tally: &mut Tally) {
    budget.requests = budget.requests.saturating_sub(s.events.len() as u64);
    tally.sent += s.events.len() as u64;
    for (k, v) in status_counts(&s.events) {
        *tally.statuses.entry(k).or_default() += v;
    }
    tally.limited.extend(
        s.events
            .iter()
            .filter(|e| e.outcome == crate::events::Outcome::Rejected)
            .map(|e| e.status),
    );
}

fn status_counts(events: &[Event]) -> BTreeMap<u16, u64> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.status).or_default() += 1;
    }
    m
}

/// `404 ×20, no answer ×3`.
fn counted(statuses: &BTreeMap<u16, u64>) -> String {
    statuses
        .iter()
        .map(|(s, n)| match s {
            0 => format!("no answer ×{n}"),
            s => format!("{s} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn limited_list(limited: &[u16]) -> String {
    limited
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn observations_of(events: &[Event]) -> Vec<Obs> {
    let refs: Vec<&Event> = events.iter().collect();
    let mut obs = send::observations(&refs);
    obs.sort_by_key(|o| o.sent);
    obs
}

/// The verifier's options for the probe: one clock of this machine's
/// (its rate measured against the wall clock, plus the usual margin), no
/// alignment known, and a history known empty only when the key was found
/// (the fit's caller is fresh).
fn options(
    unknown_history: bool,
    timeout: Duration,
    samples: &[crate::events::clock::ClockSample],
) -> Options {
    let measured = crate::events::clock::measured_ppm(samples);
    Options {
        unknown_history,
        history_settles_us: timeout.as_micros() as i64,
        clock_rate_ppm: crate::events::clock::allowed_ppm(measured, 0, None),
        ..Options::default()
    }
}

/// The grid around `seen` judged on the fit's events; `None` when
/// nothing was limited.
fn judge(events: &[Event], seen: Option<fit::Glance>, opts: &Options) -> Option<Vec<fit::Tried>> {
    let obs = observations_of(events);
    Some(fit::judge(&obs, opts, fit::candidates(seen?)))
}

/// The long-run rate a candidate allows, per second (a window's limit
/// over the window, a bucket's refill).
fn per_second(c: &fit::Candidate) -> f64 {
    let (limit, window_us) = c.policy.quota();
    limit as f64 * 1e6 / window_us.max(1) as f64
}

/// The admits of `events` per second of their span.
fn admits_per_second(events: &[Event]) -> f64 {
    let span_s = events.iter().map(|e| e.done_us).max().unwrap_or(0) as f64 / 1e6;
    let admits = events
        .iter()
        .filter(|e| e.outcome == crate::events::Outcome::Admitted)
        .count();
    if span_s > 0.0 {
        admits as f64 / span_s
    } else {
        0.0
    }
}

/// The slowest and the fastest long-run rate among the plausible fits:
/// those whose bound on these requests is within a quarter of the
/// tightest one's.
fn rate_range(tried: &[fit::Tried]) -> Option<(f64, f64)> {
    let fits = fit::fits(tried);
    let tightest = fits.first()?.verdict.allowed_max;
    let rates = fits
        .iter()
        .filter(|t| t.verdict.allowed_max as f64 <= tightest as f64 * 1.25)
        .map(|t| per_second(&t.candidate));
    let lo = rates.clone().fold(f64::INFINITY, f64::min);
    let hi = rates.fold(0.0, f64::max);
    Some((lo, hi))
}

/// The plausible fits disagree on the rate by more than half: the probe
/// has not told them apart.
fn ambiguous(tried: &[fit::Tried]) -> bool {
    rate_range(tried).is_some_and(|(lo, hi)| hi > lo * 1.5)
}

/// The decided requests of `events` in the order sent: (sent µs, admitted).
fn decisions(events: &[Event]) -> Vec<(i64, bool)> {
    observations_of(events)
        .iter()
        .filter(|o| o.decided != verify::Decided::Unknown)
        .map(|o| (o.sent, o.decided == verify::Decided::Admitted))
        .collect()
}

/// The fits of `tried` on `events`, likeliest first ([`fit::ranked`]).
fn likeliest<'a>(
    tried: &'a [fit::Tried],
    events: &[Event],
    epoch_offset: i64,
) -> Vec<&'a fit::Tried> {
    let decided = decisions(events);
    fit::ranked(tried, &|c| {
        predict::disagreements(c, &decided, epoch_offset)
    })
}

/// When the likeliest fit is a window that one of another window family
/// of the same limit could pass for (a limit of at most 500, a window
/// from 100 ms to 10 s): its limit and window, for the boundary bursts.
fn boundary_test(fits: &[&fit::Tried]) -> Option<(u64, Duration)> {
    let best = fits.first()?;
    match best.candidate.policy {
        Policy::SlidingLog { limit, window_us }
        | Policy::FixedWindow { limit, window_us }
        | Policy::SlidingWindow {
            limit, window_us, ..
        }
        | Policy::SlidingCounter { limit, window_us }
            if limit <= 500 && (100_000..=10_000_000).contains(&window_us) =>
        {
            Some((limit, Duration::from_micros(window_us)))
        }
        _ => None,
    }
}

/// When [`ambiguous`]: the geometric middle of the plausible fits' rates
/// (a steady load at it rules out those slower than it if the limiter
/// admits it all, the faster ones if it refuses some) and the longest
/// plausible window not over a minute, in seconds. The middle of the
/// range, not its median: the plausible fits crowd at the slow end (their
/// bounds are the tight ones), and a bisection on their median crawled up
/// from the slowest (1, 2, 2.3 a second against HAProxy's 10) until the
/// budget was spent.
fn disagreement(tried: &[fit::Tried]) -> Option<(f64, f64)> {
    if !ambiguous(tried) {
        return None;
    }
    let (lo, hi) = rate_range(tried)?;
    let fits = fit::fits(tried);
    let tightest = fits.first()?.verdict.allowed_max as f64;
    let longest = fits
        .iter()
        .filter(|t| t.verdict.allowed_max as f64 <= tightest * 1.25)
        .map(|t| t.candidate.policy.quota().1 as f64 / 1e6)
        .filter(|&w| w <= 60.0)
        .fold(0.0, f64::max);
    Some(((lo * hi).sqrt(), longest))
}

/// The first proof against a candidate, in words.
fn proof(c: &fit::Candidate, obs: &[Obs], base: &Options) -> String {
    proof_with(&c.policy, obs, &c.options(base))
}

fn proof_with(policy: &Policy, obs: &[Obs], opts: &Options) -> String {
    let (_, witnesses) = verify::judge_key(policy, obs, opts, true);
    match witnesses.first() {
        Some(w) => format!(
            "{} in {:.3}–{:.3} s: {}",
            w.kind.name().replace('_', " "),
            w.from_us as f64 / 1e6,
            w.to_us as f64 / 1e6,
            w.rule
        ),
        None => "no single proof kept".into(),
    }
}

/// `rlbench probe`, and `init --target URL --probe`.
pub(crate) async fn execute(
    mut probe: Probe,
    wide: bool,
    out: &mut dyn Write,
) -> Result<super::said::Said, Error> {
    probe.columns = crate::report::fold::width(wide);
    let outcome = run(&probe, &crate::interrupt::Interrupt::listen(), out).await?;
    Ok(super::said::Said {
        exit: outcome.exit,
        errors: outcome.error.into_iter().collect(),
        last: None,
    })
}
