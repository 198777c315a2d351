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
            connection: connection_lines(p, &to.dir),
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
                tls: Default::default(),
                http2: false,
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
        let path = starter(&request, &to, None, &found, None, 10.0, &[429]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("ca = \"certs/ca.pem\""), "{text}");
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
        let path = starter(&request, &to, None, &found, None, 10.0, &[429]).unwrap();
        let t = crate::scenario::read(&path).unwrap().external.unwrap();
        assert!(t.tls.insecure);
        assert_eq!(t.tls.ca, None);
        assert_eq!(t.template.http, crate::load::request::Http::H1);
    }
}
