//! The starter scenario `rlbench probe --write` leaves: the load it sends
//! (also what the probe's confirmation sends first) and the file itself,
//! written by `init` with what was found.

use super::{keys, many_keys, race, rehearse};
use crate::analyze::fit;
use crate::error::Error;
use std::path::PathBuf;

/// The load a starter sends, and what it was rehearsed to catch.
pub(super) struct StarterLoad {
    pub rate: u64,
    pub keys: u32,
    pub duration_s: u64,
    pub note: &'static str,
    /// The load on simulated limiters of the policy ([`rehearse`]).
    pub rehearsal: rehearse::Rehearsal,
    /// Each request on a connection of its own (`keep_alive = false`):
    /// one key's requests then reach every worker of a server whose
    /// workers share nothing; kept connections reach whichever accepted
    /// them.
    pub fresh_connections: bool,
    /// The bursts arm's requests at each window edge, over all keys:
    /// about twice each key's limit, together (more when a race went
    /// unproven: [`race::starter_bursts`]).
    pub burst: u64,
    /// The fewest admits the bursts proved of a limiter racing 1 ms
    /// between check and count, under every seed (`None`: not proven).
    pub race: Option<u64>,
    /// The many-keys arm, when the policy's limit lets one push clearly
    /// more keys than this load's past their limit.
    pub many: Option<many_keys::ManyKeys>,
}

/// How close together the bursts arm sends each edge's requests (ms).
const BURST_SPREAD_MS: u64 = 5;

/// Above this rate (all keys) the starter keeps its connections: a new
/// one per request costs the limiter's host a socket in TIME_WAIT each.
const FRESH_CONNECTIONS_UP_TO: u64 = 500;

/// The rehearsal's seeds: a fault is said to be caught only when it is in
/// every one (the run's own key picks differ).
const SEEDS: [u64; 3] = [1, 2, 3];

/// The longest stretch of the load rehearsed: the faults show in its
/// first windows, and a minute at 2,000/s is a second of judging.
const REHEARSED_S: u64 = 30;

/// Three windows, 10 s to 2 min (a steady arm, then a bursting one:
/// about twice each key's limit within [`BURST_SPREAD`] at every window
/// edge, where a race between one key's concurrent requests shows); each
/// key sent about thrice its rate —
/// or, when rejected requests count, at one and a half times it: a
/// correct limiter then keeps a key shut (its refusals count) and is
/// judged on them, while two limiters counting apart each see three
/// quarters of the rate, admit it whole, and are caught admitting half as
/// much again as the policy allows (under the limit, as this once sent,
/// such a pair was never caught); five keys when the key was found, else
/// one. The load is rehearsed on simulated faults first ([`rehearse`]);
/// should a pair counting apart go unproven, each key is sent twice as
/// fast, then four times (at most 2,000 a second in all).
pub(super) fn starter_load(
    best: &fit::Candidate,
    g: Option<fit::Glance>,
    keyed: bool,
) -> StarterLoad {
    let (limit, window_us) = best.policy.quota();
    let window_s = window_us as f64 / 1e6;
    let duration_s = (window_s * 3.0).clamp(10.0, 120.0).ceil() as u64;
    let limit_rate = limit as f64 / window_s.max(0.001);
    let (times, note) = if best.count_rejected {
        (1.5, "each key 1.5 times the limit")
    } else {
        (3.0, "each key about thrice the limit")
    };
    let keys = if keyed { 5 } else { 1 };
    let mut chosen = None;
    for faster in [1.0, 2.0, 4.0] {
        let mut per_key = times * faster * limit_rate;
        if !best.count_rejected {
            per_key = per_key.max(g.map_or(0.0, |g| g.per_second));
        }
        let rate = (per_key * keys as f64).clamp(10.0, 2_000.0).round() as u64;
        let rehearsal = rehearsed(best, rate, keys, duration_s);
        let caught = rehearsal.caught().any(|f| f == rehearse::Fault::Pair);
        let last = rate >= 2_000 || faster == 4.0;
        chosen = Some(StarterLoad {
            rate,
            keys,
            duration_s,
            note: if faster == 1.0 {
                note
            } else {
                "each key faster, to catch a pair"
            },
            rehearsal,
            fresh_connections: rate <= FRESH_CONNECTIONS_UP_TO,
            burst: 0,
            race: None,
            many: None,
        });
        if caught || last {
            break;
        }
    }
    let mut chosen = chosen.expect("the loop runs at least once");
    (chosen.burst, chosen.race) = race::starter_bursts(
        best,
        keys,
        std::time::Duration::from_millis(BURST_SPREAD_MS),
        duration_s,
    );
    // Only where keys were found: a limiter of one bucket for every
    // caller has no keys to forget.
    if keyed {
        chosen.many = many_keys::many_keys(best, chosen.keys, duration_s);
    }
    chosen
}

/// The load rehearsed under every seed: a fault's proven admits are the
/// fewest of any seed's, the correct limiter's the most.
fn rehearsed(best: &fit::Candidate, rate: u64, keys: u32, duration_s: u64) -> rehearse::Rehearsal {
    let load = rehearse::Load {
        rate: rate as f64,
        keys,
        duration_s: duration_s.min(REHEARSED_S),
        sweep: None,
    };
    let all: Vec<rehearse::Rehearsal> = SEEDS
        .iter()
        .map(|&seed| rehearse::rehearse(best, &load, seed))
        .collect();
    let correct = all
        .iter()
        .fold((0, 0), |(d, f), r| (d.max(r.correct.0), f.max(r.correct.1)));
    let faults = all[0]
        .faults
        .iter()
        .map(|&(fault, _)| {
            let fewest = all
                .iter()
                .filter_map(|r| r.faults.iter().find(|f| f.0 == fault))
                .map(|f| f.1)
                .min()
                .unwrap_or(0);
            (fault, fewest)
        })
        .collect();
    rehearse::Rehearsal { correct, faults }
}

/// What the load can and cannot catch, as comment lines (`# `) for the
/// starter and as one line for the probe's output.
pub(super) fn catches(load: &StarterLoad) -> (String, String) {
    let rehearsed_s = load.duration_s.min(REHEARSED_S);
    // Workers reached at random only when each request has a connection
    // of its own; kept ones stay with whichever worker accepted them.
    let reached = |f: rehearse::Fault| load.fresh_connections || f != rehearse::Fault::Workers;
    let caught: Vec<String> = load
        .rehearsal
        .faults
        .iter()
        .filter(|f| f.1 > 0 && reached(f.0))
        .map(|&(f, n)| format!("{} ({n} admits proven in {rehearsed_s} s)", f.words()))
        .collect();
    let mut missed: Vec<String> = load
        .rehearsal
        .missed()
        .map(rehearse::Fault::words)
        .collect();
    if !load.fresh_connections {
        missed.push(format!(
            "{} reliably (this load keeps its connections, and the worker that accepted them \
             decides{})",
            rehearse::Fault::Workers.words(),
            if load.rate > FRESH_CONNECTIONS_UP_TO {
                "; `keep_alive = false` spreads them"
            } else {
                ""
            }
        ));
    }
    missed.push(format!(
        "a race between concurrent requests of one key (a key's requests come about {} ms \
         apart here; arm bursts below sends them together)",
        (1_000.0 * load.keys as f64 / load.rate.max(1) as f64).round()
    ));
    match &load.many {
        Some(m) => missed.push(format!(
            "a limiter that keeps {} keys or more and forgets the rest (arm keys below sends {})",
            load.keys, m.keys
        )),
        // One key: a limiter of one bucket has no keys to forget.
        None if load.keys > 1 => missed.push(format!(
            "a limiter that keeps {} keys or more and forgets the rest (a sweep of more keys \
             would catch it, but at this limit fewer than {} fit between a key's blocks at {} \
             requests a second)",
            load.keys,
            load.keys as u64 * many_keys::MORE_THAN_STEADY,
            many_keys::RATE
        )),
        None => {}
    }
    let caught = if caught.is_empty() {
        "nothing".to_string()
    } else {
        caught.join("; ")
    };
    let text = format!(
        "Rehearsed on simulated limiters of this policy before it was written \
         (docs/own-limiter.md): it catches {caught}. It cannot catch {}.",
        missed.join("; ")
    );
    (folded(&text), format!("the starter's load: {text}"))
}

/// What the bursts arm catches, for the comment above it.
fn bursts_said(load: &StarterLoad) -> String {
    let per_key = load.burst as f64 / load.keys.max(1) as f64;
    let caught = match load.race {
        Some(proven) => format!(
            "Rehearsed: it catches a limiter that checks a key's count and counts the request \
             {} ms later ({proven} admits proven in {} s); a narrower race may go unseen.",
            race::GAP_US / 1_000,
            load.duration_s.min(race::REHEARSED_S)
        ),
        None => format!(
            "Rehearsed: a limiter that counts a request {} ms after it checks is not proven even \
             at {} requests an edge.",
            race::GAP_US / 1_000,
            load.burst
        ),
    };
    format!(
        "Each key's requests together: about {per_key:.0} a key within {BURST_SPREAD_MS} ms at every \
         edge of the policy's window, where a race between one key's concurrent requests (read \
         the count, then write it) admits past the limit. {caught}"
    )
}

/// `text` as comment lines (`# `) of at most 78 columns, folded at
/// spaces only: a path or a number stays whole.
fn folded(text: &str) -> String {
    let fold = textwrap::Options::new(76)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(false);
    textwrap::wrap(text, fold)
        .iter()
        .map(|l| format!("# {l}\n"))
        .collect()
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
    /// How the probe spoke TLS (`--cacert`, `--cert`/`--key`,
    /// `--insecure`), and whether it spoke HTTP/2 (settled before any
    /// load): the starter speaks the same.
    pub tls: crate::load::tls::TlsSpec,
    pub http2: bool,
}

/// `[target]`'s lines for how the probe reached the limiter: its HTTP
/// version and TLS, each file relative to the starter's folder when it
/// lies under it (a scenario's paths are read from its own folder), else
/// absolute.
fn connection_lines(p: &Request, dir: &std::path::Path) -> String {
    let base = std::path::absolute(dir).ok();
    let path = |f: &std::path::Path| {
        let whole = std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf());
        let shown = base
            .as_ref()
            .and_then(|b| whole.strip_prefix(b).ok())
            .unwrap_or(&whole);
        // A JSON string is a TOML basic string (the same escapes).
        serde_json::to_string(&shown.to_string_lossy()).unwrap_or_default()
    };
    let mut lines = String::new();
    if p.http2 {
        lines.push_str("http = \"2\"                   # HTTP/2, as the probe spoke it\n");
    }
    if let Some(ca) = &p.tls.ca {
        lines.push_str(&format!(
            "ca = {}  # the authority the probe trusted\n",
            path(ca)
        ));
    }
    if let (Some(cert), Some(key)) = (&p.tls.cert, &p.tls.key) {
        lines.push_str(&format!(
            "cert = {}  # the probe's client certificate\nkey = {}\n",
            path(cert),
            path(key)
        ));
    }
    if p.tls.insecure {
        lines.push_str(
            "insecure = true              # as the probe: no check of the server's certificate\n",
        );
    }
    lines
}

/// Writes the starter scenario with the key and the best fit; its path,
/// and a line saying what its load can and cannot catch.
pub(super) fn starter(
    p: &Request,
    to: &crate::app::commands::init::Destination,
    key: Option<&keys::Candidate>,
    best: &fit::Candidate,
    g: Option<fit::Glance>,
    probed_s: f64,
    limited_seen: &[u16],
) -> Result<(PathBuf, String), Error> {
    let mut load = starter_load(best, g, key.is_some());
    // HTTP/2 shares one connection by design: no connection per request.
    load.fresh_connections &= !p.http2;
    let (comment, said) = catches(&load);
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
    let path = crate::app::commands::init::init(&crate::app::commands::init::Init {
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
            catches: comment,
            fresh_connections: load.fresh_connections,
            burst: load.burst,
            burst_spread: format!("{BURST_SPREAD_MS}ms"),
            bursts_comment: folded(&bursts_said(&load)),
            many: load
                .many
                .as_ref()
                .map(|m| crate::app::commands::init::ManyKeysArm {
                    rate: m.rate,
                    keys: m.keys,
                    block: m.block,
                    comment: folded(&many_keys::said(m, load.duration_s)),
                }),
            method: p.method.clone(),
            headers: p.headers.clone(),
            connection: connection_lines(p, &to.dir),
        }),
    })?;
    Ok((path, said))
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
                tls: Default::default(),
                http2: false,
            };
            let (path, _) = starter(&request, &to, Some(&key), &found, None, 30.0, &[429]).unwrap();
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
                    // The comment unfolded.
                    let flat = text
                        .lines()
                        .map(|l| l.trim_start_matches("# "))
                        .collect::<Vec<_>>()
                        .join(" ");
                    assert!(flat.contains("two limiters counting apart ("), "{text}");
                    assert!(flat.contains("It cannot catch a race"), "{text}");
                    assert!(flat.contains("(arm keys below sends"), "{text}");
                    assert_eq!(s.policy.quota(), (11, 2_000_000));
                    // The third arm: many keys at a rate of its own, on
                    // connections it keeps.
                    let many = &s.arms[2];
                    assert_eq!(many.name, "keys");
                    assert!(many.keys.is_some_and(|k| k >= 20), "{text}");
                    assert!(matches!(
                        many.schedule,
                        Some(crate::load::schedule::Shape::Constant { .. })
                    ));
                    assert!(flat.contains("it catches a limiter that keeps only its last"));
                    assert!(
                        flat.contains("it catches a limiter that checks a key's count and counts"),
                        "{text}"
                    );
                }
            }
        }
    }

    /// The starter speaks as the probe spoke: HTTP/2, the authority it
    /// trusted (relative to the starter's folder when under it, where the
    /// scenario reads it from) and its client certificate; or no check
    /// at all when the probe checked none.
    #[test]
    fn the_starter_keeps_the_probes_tls_and_http_version() {
        let found = fit::Candidate {
            policy: Policy::SlidingLog {
                limit: 10,
                window_us: 1_000_000,
            },
            count_rejected: false,
            chunked: false,
        };
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let to = crate::app::commands::init::Destination::parse(
            &format!("{}/starter", dir.path().display()),
            true,
        )
        .unwrap();
        let mut request = Request {
            urls: vec!["https://127.0.0.1:8443/x".into()],
            method: "GET".into(),
            headers: Vec::new(),
            force: true,
            declared: None,
            tls: crate::load::tls::TlsSpec {
                ca: Some(dir.path().join("certs/ca.pem")),
                cert: Some(elsewhere.path().join("client.pem")),
                key: Some(elsewhere.path().join("client.key")),
                insecure: false,
            },
            http2: true,
        };
        let (path, _) = starter(&request, &to, None, &found, None, 10.0, &[429]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("ca = \"certs/ca.pem\""), "{text}");
        // No key found: one bucket for every caller, no keys to forget.
        assert!(!text.contains("name = \"keys\""), "{text}");
        // HTTP/2 shares a connection by design: the starter keeps it, and
        // does not claim to reach every worker.
        assert!(!text.contains("keep_alive"), "{text}");
        assert!(text.contains("counting alone reliably"), "{text}");
        let s = crate::scenario::read(&path).unwrap();
        let t = s.external.unwrap();
        assert_eq!(t.template.http, crate::load::request::Http::H2);
        assert_eq!(t.tls.ca, Some(dir.path().join("certs/ca.pem")));
        assert_eq!(t.tls.cert, Some(elsewhere.path().join("client.pem")));
        assert_eq!(t.tls.key, Some(elsewhere.path().join("client.key")));
        assert!(!t.tls.insecure);

        request.tls = crate::load::tls::TlsSpec {
            insecure: true,
            ..Default::default()
        };
        request.http2 = false;
        let (path, _) = starter(&request, &to, None, &found, None, 10.0, &[429]).unwrap();
        let t = crate::scenario::read(&path).unwrap().external.unwrap();
        assert!(t.tls.insecure);
        assert_eq!(t.tls.ca, None);
        assert_eq!(t.template.http, crate::load::request::Http::H1);
        // Over HTTP/1.1 at this rate, a connection per request: one key's
        // requests reach every worker, as the rehearsal assumed.
        assert!(!t.template.keep_alive);
    }
}
