//! The judge and the minimiser: a case's verdict, and a failure shrunk to
//! a small trace that can be checked by hand, printed as code.

use super::*;

#[derive(Clone, Debug)]
pub(crate) struct Judged {
    pub(crate) v: Verdict,
    pub(crate) header: Remaining,
    /// More admits wholly inside one span shorter than `band`'s than the
    /// band allows: what report.html's chart would draw above it.
    pub(crate) above_band: bool,
}

impl Judged {
    /// Which promises broke: definite, false rejects, contradictions,
    /// more admitted than the bound U says any correct limiter could, and
    /// the report's band.
    pub(crate) fn broken(&self) -> [bool; 5] {
        [
            self.v.definite_violations > 0,
            self.v.false_rejects > 0,
            self.header.contradicted > 0,
            self.v.admitted > self.v.allowed_max,
            self.above_band,
        ]
    }
}

pub(crate) fn judge_run(run: &Run, policy: &Policy, opts: &Options) -> Judged {
    let v = verify_key(policy, &run.obs, opts);
    let mut header = Remaining::default();
    remaining_against_admits(
        "k",
        Some(policy),
        &run.obs,
        &run.witnesses,
        opts,
        &mut header,
    );
    Judged {
        v,
        header,
        above_band: above_band(&run.obs, policy, opts),
    }
}

/// Whether the admits wholly inside some span `(t − span, t]` outnumber
/// what `band` says a correct limiter may reach there (the report's
/// admitted-vs-allowed chart, counted the same way).
fn above_band(obs: &[Obs], policy: &Policy, opts: &Options) -> bool {
    let Some(b) = band(policy, opts) else {
        return false;
    };
    let admits: Vec<(i64, i64)> = obs
        .iter()
        .filter(|o| o.decided == Decided::Admitted)
        .map(|o| (o.sent, o.done))
        .collect();
    admits.iter().any(|&(_, t)| {
        let inside = admits
            .iter()
            .filter(|&&(sent, done)| done <= t && sent > t - b.span_us)
            .count();
        inside as u64 > b.most
    })
}

pub(crate) fn judge(c: &Case) -> (Run, Judged) {
    let run = simulate(&c.lim, &c.clock, &c.warm, &c.reqs);
    let j = judge_run(&run, &c.policy, &c.opts);
    (run, j)
}

/// Drops requests (trace and warm-up; the limiter re-runs every time, so
/// the trace stays one a correct limiter produced) while a promise that
/// broke before still breaks.
pub(crate) fn minimize(case: &Case) -> Case {
    let before = judge(case).1.broken();
    let still = |c: &Case| {
        let now = judge(c).1.broken();
        (0..4).any(|i| before[i] && now[i])
    };
    let mut c = case.clone();
    let mut chunk = (c.reqs.len() + c.warm.len()).max(2) / 2;
    loop {
        let mut progress = false;
        for warm in [true, false] {
            let mut i = 0;
            while i < if warm { c.warm.len() } else { c.reqs.len() } {
                let mut t = c.clone();
                let list = if warm { &mut t.warm } else { &mut t.reqs };
                let end = (i + chunk).min(list.len());
                list.drain(i..end);
                if still(&t) {
                    c = t;
                    progress = true;
                } else {
                    i += chunk;
                }
            }
        }
        if !progress {
            if chunk == 1 {
                return c;
            }
            chunk = (chunk / 2).max(1);
        }
    }
}

/// A case as a hand-checkable listing, and the trace as code.
pub(crate) fn show(c: &Case) -> String {
    let (run, j) = judge(c);
    let mut s = String::new();
    let _ = writeln!(s, "{}", c.label);
    let _ = writeln!(s, "policy: {:?}", c.policy);
    let _ = writeln!(s, "opts: {:?}", c.opts);
    let _ = writeln!(
        s,
        "clock: epoch {} (wall ≡ {} mod 1e9), resolution {} µs, offsets {:?}",
        c.clock.epoch,
        c.clock.epoch.rem_euclid(1_000_000_000),
        c.clock.resolution,
        c.clock.offsets
    );
    let _ = writeln!(s, "limiter: {:?}", c.lim);
    let _ = writeln!(
        s,
        "verdict: {:?}\nheader: {:?}\nwitnesses: {:?}",
        j.v, j.header, run.witnesses
    );
    let line = |s: &mut String, tag: &str, r: &Req, d: Option<Decision>| {
        let _ = write!(
            s,
            "  {tag} sent {} done {} answered {} plan {:?} decider {} lag {}‰ (≤ {} µs)",
            r.sent, r.done, r.answered, r.plan, r.decider, r.lag, r.max_stale
        );
        match d {
            Some(d) => {
                let _ = writeln!(
                    s,
                    " -> at {} reading epoch{:+} {} remaining {}",
                    d.at,
                    d.reading - c.clock.epoch,
                    if d.answer.admitted { "ADMIT" } else { "reject" },
                    d.answer.remaining
                );
            }
            None => {
                let _ = writeln!(s, " -> never decided");
            }
        }
    };
    for (i, r) in c.warm.iter().enumerate() {
        line(&mut s, "warm", r, run.decisions[i]);
    }
    for (i, r) in c.reqs.iter().enumerate() {
        line(&mut s, &format!("#{i}"), r, run.decisions[c.warm.len() + i]);
    }
    let _ = writeln!(s, "as code:");
    for o in &run.obs {
        let _ = writeln!(
            s,
            "    obs({}, {}, Decided::{:?}),",
            o.sent, o.done, o.decided
        );
    }
    s
}

/// Per kind, `cases` seeds of `algo`: a correct limiter must never be
/// flagged, and the load must press it. Every failing kind is reported
/// with its first seed, minimised.
pub(crate) fn correct_limiter(algo: Algo, cases: u64) {
    let mut failures = Vec::new();
    for kind in Kind::ALL {
        let (mut pressed, mut rejects, mut checked) = (0u64, 0u64, 0u64);
        let (mut flagged, mut cases_flagged) = ([0u64; 5], 0u64);
        let mut first: Option<(u64, Case)> = None;
        // On every 8th case: (tried, caught) for one more, one fewer.
        let mut more = (0u64, 0u64);
        let mut fewer = (0u64, 0u64);
        for seed in 0..cases {
            let case = gen_case(algo, kind, seed);
            if seed % 8 == 0 {
                for (delta, tally) in [(1, &mut more), (-1, &mut fewer)] {
                    let Some(lim) = case.lim.with_limit(delta) else {
                        continue;
                    };
                    let (_, m) = judge(&Case {
                        lim,
                        ..case.clone()
                    });
                    tally.0 += 1;
                    tally.1 += u64::from(if delta > 0 {
                        m.v.definite_violations > 0
                    } else {
                        m.v.false_rejects > 0
                    });
                }
            }
            let (_, j) = judge(&case);
            pressed += u64::from(j.v.rejected > 0);
            rejects += j.v.rejected;
            checked += j.header.checked;
            let broken = j.broken();
            for (f, b) in flagged.iter_mut().zip(broken) {
                *f += u64::from(b);
            }
            if broken.iter().any(|&b| b) {
                cases_flagged += 1;
                if first.is_none() {
                    first = Some((seed, case));
                }
            }
        }
        // Not vacuous: most cases hit the limit, the header check ran, and
        // the same loads tell a limiter one off from the correct one.
        if pressed * 10 < cases * 7 || checked < cases {
            failures.push(format!(
                "{algo:?} {kind:?}: the load pressed only {pressed} of {cases} cases \
                 ({rejects} rejects, {checked} header checks)"
            ));
        }
        if std::env::var_os("ADVERSARIAL_RATES").is_some() {
            eprintln!("{algo:?} {kind:?}: one more caught {more:?}, one fewer caught {fewer:?}");
        }
        // Requests that may be decided any time later leave a bucket's
        // rejects mostly unjudgeable: there one fewer may go unseen; and
        // they widen every span a rule counts, so one more is caught less
        // often (a sliding counter's, judged with clocks that may run
        // 0.5 % fast: 7–10 of 75): there the floor is 1 in 20.
        let floor = if kind.timeouts() { 20 } else { 10 };
        if more.1 * floor < more.0 || (fewer.1 == 0 && !kind.timeouts()) {
            failures.push(format!(
                "{algo:?} {kind:?}: a limiter allowing one more was caught in {} of {}, one \
                 allowing one fewer in {} of {}",
                more.1, more.0, fewer.1, fewer.0
            ));
        }
        if let Some((seed, case)) = first {
            failures.push(format!(
                "{algo:?} {kind:?}: a correct limiter was flagged in {} of {cases} cases \
                 (definite, false rejects, contradicted, over U, above the band: {flagged:?}); first seed {seed}, \
                 minimised:\n{}",
                cases_flagged,
                show(&minimize(&case))
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
