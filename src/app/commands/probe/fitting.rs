//! Step 3, fit: one fresh caller saturated, rested and saturated again,
//! then steady rounds ([`bisect`](super::bisect)) while the budget lasts;
//! the grid judged again on the whole trace after every round.

use super::asked::{interrupted, Outcome};
use super::bisect::{fill_round, Bisection};
use super::find_key::Keyed;
use super::grid::{judge, observations_of, options};
use super::keys;
use super::probing::{Probing, Step, Stop};
use super::scale::Scaled;
use super::send::Phase;
use crate::analyze::fit;
use crate::error::{Error, Exit};
use crate::events::clock::ClockSample;
use crate::events::Event;
use crate::load::request::Template;
use crate::verify::Options;
use hyper::Uri;
use std::time::Duration;
use tokio::time::Instant;

/// The fit leaves this much of the time for the confirmation.
pub(super) const CONFIRM_TIME: Duration = Duration::from_secs(10);

/// The fresh caller's trace as the fit builds it.
pub(super) struct Fitting {
    /// The fit's clock starts here.
    pub start: Instant,
    /// Its template and URLs, the same in every round.
    sending: (Template, Vec<Uri>),
    /// The caller's history is not known empty (the key was not found).
    unknown_history: bool,
    pub events: Vec<Event>,
    samples: Vec<ClockSample>,
    /// The wall clock's µs at the fit's 0.
    pub epoch_offset: i64,
    pub opts: Options,
    /// The grid comes from the first saturation alone (the rests would
    /// thin its admits per second).
    seen: Option<fit::Glance>,
    /// The longest judging so far.
    judging: Duration,
    /// The grid judged on the trace; `None` when nothing was limited.
    pub judged: Option<Vec<fit::Tried>>,
    /// Kept back from the rounds beside the confirmation's time.
    pub keep_back: Duration,
}

/// The fit's trace, done.
pub(super) struct Trace {
    /// The fit's clock starts here.
    pub start: Instant,
    pub events: Vec<Event>,
    pub epoch_offset: i64,
    pub opts: Options,
    /// The fit's last answer, seconds from its start.
    pub span_s: f64,
}

impl Fitting {
    /// A round's phase: `count` requests at `rate` from the one caller.
    pub(super) fn phase(&self, pr: &Probing<'_>, rate: f64, count: u64) -> Phase {
        pr.phase(self.sending.clone(), rate, count, 1)
    }

    /// A clock sample more and the verifier's options from them all.
    fn resample(&mut self, timeout: Duration) {
        self.samples
            .push(crate::load::clock_watch::sample(self.start));
        self.opts = options(self.unknown_history, timeout, &self.samples);
    }

    /// Judging the grid takes time too (longer on a busy machine, and the
    /// next judging is on more requests): the longest one so far is kept
    /// back, twice, from the rounds beside the confirmation's time.
    fn judge_timed(&mut self) {
        let began = Instant::now();
        self.judged = judge(&self.events, self.seen, &self.opts);
        self.judging = self.judging.max(began.elapsed());
        self.keep_back = self.judging * 2;
    }

    /// The grid judged again on the trace as it is now.
    pub(super) fn rejudge(&mut self, timeout: Duration) {
        self.resample(timeout);
        self.judge_timed();
    }

    /// Prints what the fit sent; stops the probe when it was interrupted
    /// or the fresh caller was not limited.
    pub(super) fn finish(self, pr: &mut Probing<'_>) -> Step<(Trace, Vec<fit::Tried>)> {
        if pr.interrupt.fired() {
            return Err(Stop::Concluded(interrupted()));
        }
        let events = self.events;
        let span_s = events.iter().map(|e| e.done_us).max().unwrap_or(0) as f64 / 1e6;
        pr.say(&format!(
            "  fit: {} requests over {span_s:.1} s, one fresh caller: {} limited ({} \
             requests in all)",
            events.len(),
            events
                .iter()
                .filter(|e| e.outcome == crate::events::Outcome::Rejected)
                .count(),
            pr.tally.sent
        ))?;
        let Some(tried) = self.judged else {
            // Nothing both admitted and limited: say which of the two.
            let limited = events
                .iter()
                .filter(|e| e.outcome == crate::events::Outcome::Rejected)
                .count();
            pr.say(&if limited == 0 {
                "the fresh caller was not limited: nothing to fit (the limit moved during the \
                 probe?)"
                    .to_string()
            } else {
                format!(
                    "the fresh caller got {limited} limited answers of {} and none \
                     admitted: nothing to fit (a limiter refusing a caller whole — an empty key, \
                     a ban — keeps no rate the probe can find)",
                    events.len()
                )
            })?;
            return Err(Stop::Concluded(Outcome {
                exit: Exit::GateFailed,
                error: Some("the probe found no policy to fit".into()),
            }));
        };
        let trace = Trace {
            start: self.start,
            events,
            epoch_offset: self.epoch_offset,
            opts: self.opts,
            span_s,
        };
        Ok((trace, tried))
    }
}

/// Saturates one caller new to the limiter, then sends the rounds while
/// the fits disagree and the budget lasts.
pub(super) async fn fit(
    pr: &mut Probing<'_>,
    scaled: &Scaled,
    keyed: &Keyed,
) -> Result<Fitting, Error> {
    let saturate = if scaled.glance.is_some_and(|g| g.per_second > 0.0) {
        2.0
    } else {
        3.0
    };
    let mut f = saturated(pr, keyed, saturate).await;
    let burst = (scaled.sent.admitted() + 10).min(keyed.rate as u64);
    let rest = Duration::from_secs_f64(saturate / 2.0);
    let mut steps = Bisection::new(rest, keyed.rate, burst);
    let mut filled = false;
    while !pr.interrupt.fired() && f.judged.is_some() {
        // The bisection's rounds, then once a burst from a full bucket
        // when the fits left differ in their bursts.
        let (round, fill) = match steps.next(f.judged.as_deref(), &f.events, f.epoch_offset) {
            Some(round) => (round, false),
            None if !filled => {
                filled = true;
                match fill_round(f.judged.as_deref(), &f.events, f.epoch_offset) {
                    Some(round) => (round, true),
                    None => break,
                }
            }
            None => break,
        };
        let (wait, rate, count) = (round.wait, round.rate, round.count);
        let need = wait + Duration::from_secs_f64(count as f64 / rate) + pr.p.timeout;
        if count < 3
            || pr.budget.time_left() < need + CONFIRM_TIME + f.keep_back
            || !pr.budget.allows(count, rate)
        {
            break;
        }
        pr.rest(wait).await;
        let phase = f.phase(pr, rate, count);
        let s = pr.send(phase, f.start).await;
        pr.say(&format!(
            "  fit: {count} requests at {rate:.2}/s after {:.1} s at rest: {} limited",
            wait.as_secs_f64(),
            s.limited()
        ))?;
        if !fill {
            steps.heard(rate, &s.events);
        }
        f.events.extend(s.events);
        f.rejudge(pr.p.timeout);
    }
    Ok(f)
}

/// The first saturation: `saturate` seconds' worth at the key phases'
/// rate from one caller new to the limiter — every candidate fixed at
/// this phase's values, and a path key (whose fixed value is the URL's
/// own, the same in every phase) as this phase's own path — judged.
async fn saturated(pr: &mut Probing<'_>, keyed: &Keyed, saturate: f64) -> Fitting {
    let start = Instant::now();
    let (tag, no) = pr.next_tag();
    let path_key = keyed
        .key
        .as_ref()
        .filter(|k| matches!(k, keys::Candidate::Path { .. }));
    let sending = pr.sending(path_key, &tag, no, 1);
    let mut samples = vec![crate::load::clock_watch::sample(start)];
    let epoch_offset = samples[0].wall_us - samples[0].trace_us;
    let count = ((keyed.rate * saturate) as u64)
        .min(pr.budget.requests / 2)
        .max(1);
    let phase = pr.phase(sending.clone(), keyed.rate, count, 1);
    let s = pr.send(phase, start).await;
    samples.push(crate::load::clock_watch::sample(start));
    let unknown_history = keyed.key.is_none();
    let opts = options(unknown_history, pr.p.timeout, &samples);
    let seen = fit::glance(&observations_of(&s.events));
    let mut f = Fitting {
        start,
        sending,
        unknown_history,
        events: s.events,
        samples,
        epoch_offset,
        opts,
        seen,
        judging: Duration::ZERO,
        judged: None,
        keep_back: Duration::ZERO,
    };
    f.judge_timed();
    f
}
