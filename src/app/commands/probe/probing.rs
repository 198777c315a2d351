//! A probe under way, carried from step to step: what it was asked, its
//! output, its budget and tally, the phases' tags and the key candidates
//! every phase carries. Opening it prints the first line and checks the
//! query candidates; each phase is sent through it and spent from the
//! budget.

use super::asked::{Outcome, Probe};
use super::keys;
use super::lines::{line, Folded};
use super::send::{self, Phase, Sent};
use super::tally::{counted, spend, status_counts, Budget, Tally};
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::load::request::Template;
use hyper::header::HeaderName;
use hyper::Uri;
use std::io::Write;
use std::time::Duration;
use tokio::time::Instant;

/// The requests that check whether a target answers requests carrying
/// the query candidates.
const QUERY_CHECK: u64 = 3;

/// Why the probe's steps end early: a conclusion already printed
/// (interrupted, nothing limited…) or an error.
pub(super) enum Stop {
    Concluded(Outcome),
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// What a step of the probe gives the next one, or why it stops.
pub(super) type Step<T> = Result<T, Stop>;

/// A probe under way.
pub(super) struct Probing<'a> {
    pub p: &'a Probe,
    pub interrupt: &'a Interrupt,
    out: Folded<'a>,
    /// The probe's one clock starts here.
    pub origin: Instant,
    pub budget: Budget,
    pub tally: Tally,
    /// This probe's own, in every fixed candidate's value.
    nonce: String,
    phase_no: u8,
    /// The key candidates every phase carries (the query ones only when
    /// a target answers requests carrying them).
    pub candidates: Vec<keys::Candidate>,
}

impl<'a> Probing<'a> {
    /// Prints the probe's first line, starts its clock and budget, and
    /// lists the key candidates.
    pub(super) async fn open(
        p: &'a Probe,
        interrupt: &'a Interrupt,
        out: &'a mut dyn Write,
    ) -> Result<Self, Error> {
        let mut out = Folded {
            out,
            columns: p.columns,
            pending: Vec::new(),
        };
        let urls: Vec<String> = p.targets.iter().map(|u| u.to_string()).collect();
        line(
            &mut out,
            &format!(
                "probing {}: at most {} requests in at most {} s, to this machine only",
                urls.join(", "),
                p.max_requests,
                p.max_time.as_secs()
            ),
        )?;
        let origin = Instant::now();
        let budget = Budget {
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
        let candidates = keys::candidates(&p.key_headers, &sent_headers, &p.targets, v4);
        let mut probing = Probing {
            p,
            interrupt,
            out,
            origin,
            budget,
            tally: Tally::default(),
            nonce,
            phase_no: 0,
            candidates,
        };
        probing.check_queries().await?;
        Ok(probing)
    }

    /// The query candidates ride in every URL: a target that answers no
    /// request carrying them (a server routing on the whole request
    /// target, one refusing unknown parameters) gets none.
    async fn check_queries(&mut self) -> Result<(), Error> {
        let queries: Vec<String> = self
            .candidates
            .iter()
            .filter(|c| matches!(c, keys::Candidate::Query(_)))
            .map(keys::Candidate::name)
            .collect();
        if queries.is_empty() {
            return Ok(());
        }
        let (tag, no) = self.next_tag();
        let phase = self.phase(
            self.sending(None, &tag, no, 1),
            QUERY_CHECK as f64 * 10.0,
            QUERY_CHECK,
            1,
        );
        let s = self.send(phase, self.origin).await;
        if s.decided() == 0 {
            self.candidates
                .retain(|c| !matches!(c, keys::Candidate::Query(_)));
            self.say(&format!(
                "  keys: {} not tried: no request carrying them got a decision ({})",
                queries.join(", "),
                counted(&status_counts(&s.events))
            ))?;
        }
        Ok(())
    }

    /// Prints one line.
    pub(super) fn say(&mut self, text: &str) -> Result<(), Error> {
        line(&mut self.out, text)
    }

    /// The next phase's tag (the nonce and the phase's number) and number.
    pub(super) fn next_tag(&mut self) -> (String, u8) {
        self.phase_no += 1;
        (format!("{}-{}", self.nonce, self.phase_no), self.phase_no)
    }

    /// A phase's template and URLs: `fresh` (if any) new in every request,
    /// every other candidate fixed at this phase's `tag`.
    pub(super) fn sending(
        &self,
        fresh: Option<&keys::Candidate>,
        tag: &str,
        no: u8,
        keys: u32,
    ) -> (Template, Vec<Uri>) {
        (
            keys::template(&self.p.template, &self.candidates, fresh, tag, no, keys),
            keys::targets(&self.p.targets, &self.candidates, fresh, tag),
        )
    }

    /// `count` requests at `rate` over `keys` keys with `sending`'s
    /// template and URLs.
    pub(super) fn phase(
        &self,
        (template, targets): (Template, Vec<Uri>),
        rate: f64,
        count: u64,
        keys: u32,
    ) -> Phase {
        Phase {
            targets,
            template,
            rate,
            count,
            keys,
            timeout: self.p.timeout,
            tls: self.p.tls.clone(),
        }
    }

    /// Sends `phase` on the clock that starts at `origin` and spends it
    /// from the budget.
    pub(super) async fn send(&mut self, phase: Phase, origin: Instant) -> Sent {
        let s = send::send(phase, origin, self.interrupt).await;
        spend(&mut self.budget, &s, &mut self.tally);
        s
    }

    /// Waits `wait`, or until interrupted.
    pub(super) async fn rest(&self, wait: Duration) {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.interrupt.wait() => {}
        }
    }

    /// Waits until `at`, or until interrupted.
    pub(super) async fn rest_until(&self, at: Instant) {
        tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            () = self.interrupt.wait() => {}
        }
    }
}
