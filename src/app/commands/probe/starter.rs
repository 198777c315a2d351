//! The starter scenario `rlbench probe --write` leaves: the load it sends
//! (also what the probe's confirmation sends first) and the file itself,
//! written by `init` with what was found.

use super::keys;
use crate::analyze::fit;
use crate::error::Error;
use std::path::PathBuf;

/// The load a starter sends.
pub(super) struct StarterLoad {
    pub rate: u64,
    pub keys: u32,
    pub duration_s: u64,
    pub note: &'static str,
}

/// Three windows, 10 s to 2 min; each key sent about thrice its rate —
/// or, when rejected requests count, at one and a half times it: a
/// correct limiter then keeps a key shut (its refusals count) and is
/// judged on them, while two limiters counting apart each see three
/// quarters of the rate, admit it whole, and are caught admitting half as
/// much again as the policy allows (under the limit, as this once sent,
/// such a pair was never caught); five keys when the key was found, else
/// one. Either way a pair counting apart admits more than one limiter
/// may: the load that catches the commonest fault.
pub(super) fn starter_load(
    best: &fit::Candidate,
    g: Option<fit::Glance>,
    keyed: bool,
) -> StarterLoad {
    let (limit, window_us) = best.policy.quota();
    let window_s = window_us as f64 / 1e6;
    let duration_s = (window_s * 3.0).clamp(10.0, 120.0).ceil() as u64;
    let rate = limit as f64 / window_s.max(0.001);
    let (per_key, note) = if best.count_rejected {
        (
            1.5 * rate,
            "each key 1.5 times the limit: a pair counting apart is caught",
        )
    } else {
        (
            (3.0 * rate).max(g.map_or(0.0, |g| g.per_second)),
            "each key about thrice the limit: a pair counting apart is caught",
        )
    };
    let keys = if keyed { 5 } else { 1 };
    let rate = (per_key * keys as f64).clamp(10.0, 2_000.0).round() as u64;
    StarterLoad {
        rate,
        keys,
        duration_s,
        note,
    }
}

/// What the probe sent, as the starter sends it again.
pub(super) struct Request {
    /// Every URL it was given, in its order (the probe fans out across
    /// them round robin, and so does the starter).
    pub urls: Vec<String>,
    pub method: String,
    /// The user's headers (`-H`).
    pub headers: Vec<(String, String)>,
    /// Overwrite the file (`--force`).
    pub force: bool,
    /// The policy the user declared (`--policy`): the intent, which the
    /// starter declares in place of what was found.
    pub declared: Option<String>,
}

/// Writes the starter scenario with the key and the best fit.
pub(super) fn starter(
    p: &Request,
    to: &crate::app::commands::init::Destination,
    key: Option<&keys::Candidate>,
    best: &fit::Candidate,
    g: Option<fit::Glance>,
    probed_s: f64,
    limited_seen: &[u16],
) -> Result<PathBuf, Error> {
    let load = starter_load(best, g, key.is_some());
    // The slack is the clock's resolution plus how far apart the
    // deciders' clocks may be; the probe cannot see either, so the starter
    // names the keys with the defaults a run takes (docs/verifier.md).
    let policy = match &p.declared {
        Some(text) => format!(
            "# the policy you declared (--policy): the run holds the limiter to it.\n\
             # rlbench probe found the limiter keeping, on {probed_s:.0} s of probing:\n\
             # {}\n{}",
            best.describe(),
            crate::app::commands::init::policy_lines(text)?
        ),
        None => format!(
            "# rlbench probe found it on {probed_s:.0} s of probing: {}\n\
         # (the loosest policy that explains every decision: when in doubt, the weaker\n\
         # bound. It is what the limiter does today, bugs included: declare the policy\n\
         # you intend instead to hold the limiter to it.)\n{}\
         # clock_resolution = \"1ms\"  # its clock's coarsest step (\"1s\": whole seconds)\n\
         # clock_skew = \"10ms\"       # how far apart its deciders' clocks may be \
         (\"0s\": one process)\n",
            best.describe(),
            best.lines()
        ),
    };
    crate::app::commands::init::init(&crate::app::commands::init::Init {
        name: &to.name,
        target: Some(&p.urls[0]),
        policy: None,
        preset: None,
        key_header: None,
        force: p.force,
        dir: &to.dir,
        found: Some(crate::app::commands::init::Found {
            urls: p.urls.clone(),
            policy,
            key: key.map(|k| k.scenario_line()),
            limited: limited_seen.to_vec(),
            rate: load.rate,
            keys: load.keys,
            duration_s: load.duration_s,
            rate_note: load.note,
            method: p.method.clone(),
            headers: p.headers.clone(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reference_api::Policy;

    /// With `--policy`, the starter declares the intent (and says what
    /// was found); without, the loosest fit, said to be today's behaviour.
    #[test]
    fn the_starter_declares_the_intent_when_one_was_given() {
        let found = fit::Candidate {
            policy: Policy::SlidingLog {
                limit: 11,
                window_us: 2_000_000,
            },
            count_rejected: false,
            chunked: false,
        };
        let key = keys::Candidate::Header(hyper::header::HeaderName::from_static("x-key"));
        for declared in [
            None,
            Some(r#"algorithm = "sliding_log", limit = 10, window = "2s""#),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let to = crate::app::commands::init::Destination::parse(
                &format!("{}/starter", dir.path().display()),
                false,
            )
            .unwrap();
            let request = Request {
                urls: vec!["http://127.0.0.1:8080/x".into()],
                method: "GET".into(),
                headers: Vec::new(),
                force: false,
                declared: declared.map(str::to_string),
            };
            let path = starter(&request, &to, Some(&key), &found, None, 30.0, &[429]).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let s = crate::scenario::read(&path).unwrap();
            match declared {
                Some(_) => {
                    assert!(
                        text.contains("# the policy you declared (--policy)"),
                        "{text}"
                    );
                    assert!(text.contains("# sliding_log: 11 per 2s"), "{text}");
                    assert_eq!(s.policy.quota(), (10, 2_000_000));
                }
                None => {
                    assert!(text.contains("bugs included"), "{text}");
                    assert_eq!(s.policy.quota(), (11, 2_000_000));
                }
            }
        }
    }
}
