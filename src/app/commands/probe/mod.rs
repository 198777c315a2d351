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
//! 4. judge: every policy of the grid against that trace
//!    ([`fit`](crate::analyze::fit)); what fits, what is ruled out and
//!    why, the best one as `[policy]` lines (and, with `--write`, a
//!    starter scenario).

pub(crate) mod keys;

mod asked;
mod bisect;
mod boundary;
mod confirm;
mod find_key;
mod fitting;
mod grid;
mod lines;
mod many_keys;
mod probing;
mod race;
mod rehearse;
mod report;
mod scale;
mod send;
mod starter;
mod tally;

pub(crate) use asked::{Outcome, Probe};

use crate::error::Error;
use crate::interrupt::Interrupt;
use probing::{Probing, Step, Stop};
use std::io::Write;

/// Runs the probe, printing as it goes.
pub(crate) async fn run(
    p: &Probe,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    match steps(p, interrupt, out).await {
        Ok(outcome) | Err(Stop::Concluded(outcome)) => Ok(outcome),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// The probe's steps in their order, each on what the one before found.
async fn steps(p: &Probe, interrupt: &Interrupt, out: &mut dyn Write) -> Step<Outcome> {
    crate::target::reachable(&p.targets).await?;
    let mut pr = Probing::open(p, interrupt, out).await?;
    let scaled = scale::scale(&mut pr).await?;
    let keyed = find_key::find_key(&mut pr, &scaled).await?;
    let mut fitting = fitting::fit(&mut pr, &scaled, &keyed).await?;
    boundary::boundary(&mut pr, &mut fitting).await;
    let (trace, tried) = fitting.finish(&mut pr)?;
    let key = keyed.key.as_ref();
    let ranked = grid::likeliest(&tried, &trace.events, trace.epoch_offset);
    let confirmed = confirm::confirm(&mut pr, &trace, ranked, scaled.glance, key).await?;
    let findings = report::Findings {
        tried: &tried,
        fits: confirmed.fits,
        confirmed: confirmed.requests,
        trace: &trace,
        key,
        glance: scaled.glance,
    };
    Ok(report::report(&mut pr, &findings)?)
}

/// `rlbench probe`, and `init --target URL --probe`.
pub(crate) async fn execute(
    mut probe: Probe,
    wide: bool,
    out: &mut dyn Write,
) -> Result<super::ending::Ending, Error> {
    probe.columns = crate::report::fold::width(wide);
    // The protocol is settled before any load, as `attack` settles it:
    // `auto` becomes 2 where every https:// target agrees to it.
    crate::target::reachable(&probe.targets).await?;
    probe.template.http =
        crate::load::tls::handshakes(&probe.targets, probe.tls.as_ref(), probe.template.http)
            .await?;
    let outcome = run(&probe, &crate::interrupt::Interrupt::listen(), out).await?;
    Ok(super::ending::Ending {
        exit: outcome.exit,
        errors: outcome.error.into_iter().collect(),
        last: None,
    })
}
