//! Step 2, keys: a baseline with every candidate fixed, then one phase
//! per candidate sent fresh in each request ([`keys`]); the candidate
//! whose phase lost the limited answers is the key.

use super::asked::interrupted;
use super::keys;
use super::probing::{Probing, Step, Stop};
use super::scale::Scaled;
use super::tally::{counted, status_counts};
use crate::error::Error;

/// The key phases and the fit send at most this fast.
const MAX_RATE: f64 = 1_000.0;

/// What the key phases found.
pub(super) struct Keyed {
    /// The candidate that alone (or first) moved the limits.
    pub key: Option<keys::Candidate>,
    /// The key phases' rate, the fit's too.
    pub rate: f64,
}

/// Sends the baseline and the candidates' phases and prints the key.
pub(super) async fn find_key(pr: &mut Probing<'_>, scaled: &Scaled) -> Step<Keyed> {
    let key_rate = (scaled.rate * 2.0).min(MAX_RATE);
    let key_count = ((3 * scaled.sent.admitted() + 10) as f64)
        .min(key_rate)
        .max(10.0) as u64;
    let (tag, no) = pr.next_tag();
    let phase = pr.phase(pr.sending(None, &tag, no, 1), key_rate, key_count, 1);
    let baseline = pr.send(phase, pr.origin).await;
    let base_share = baseline.limited_share();
    pr.say(&format!(
        "  keys: every candidate fixed: {} of {} limited",
        baseline.limited(),
        baseline.events.len()
    ))?;
    let shares = fresh_phases(pr, key_rate, key_count).await?;
    if pr.interrupt.fired() {
        return Err(Stop::Concluded(interrupted()));
    }
    let moved = keys::moved(base_share, &shares);
    say_key(pr, &moved)?;
    Ok(Keyed {
        key: moved.first().cloned(),
        rate: key_rate,
    })
}

/// One phase per candidate, new in every request, while the budget
/// lasts: each judged one's share of limited answers.
async fn fresh_phases(
    pr: &mut Probing<'_>,
    key_rate: f64,
    key_count: u64,
) -> Result<Vec<(keys::Candidate, f64)>, Error> {
    let mut shares = Vec::new();
    for c in &pr.candidates.clone() {
        if pr.interrupt.fired() || !pr.budget.allows(key_count, key_rate) {
            pr.say(&format!(
                "  keys: the budget ends before {} is tried",
                c.name()
            ))?;
            break;
        }
        let (tag, no) = pr.next_tag();
        let fresh_keys = (key_count * 20).min(60_000) as u32;
        let phase = pr.phase(
            pr.sending(Some(c), &tag, no, fresh_keys),
            key_rate,
            key_count,
            fresh_keys,
        );
        let s = pr.send(phase, pr.origin).await;
        let undecided = s.events.len() as u64 - s.decided();
        let note = if s.decided() * 2 < s.events.len() as u64 {
            format!(
                " — {undecided} without a decision ({}): not judged",
                counted(&status_counts(&s.events))
            )
        } else {
            String::new()
        };
        pr.say(&format!(
            "  keys: {} fresh in every request: {} of {} limited{note}",
            c.name(),
            s.limited(),
            s.events.len()
        ))?;
        if s.decided() * 2 >= s.events.len() as u64 {
            shares.push((c.clone(), s.limited_share()));
        }
    }
    Ok(shares)
}

/// The `key:` line.
fn say_key(pr: &mut Probing<'_>, moved: &[keys::Candidate]) -> Result<(), Error> {
    match (moved.first(), moved.len()) {
        (Some(k), 1) => pr.say(&format!("key: {} (it alone moved the limits)", k.name())),
        (Some(k), _) => pr.say(&format!(
            "key: {} — and {} moved the limits too: the limiter may key on them together",
            k.name(),
            moved[1..]
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (None, _) => pr.say(
            "key: none of the candidates moved the limits: every caller may share one bucket, \
             or the key is something not tried (--key-header NAME tries a header)",
        ),
    }
}
