//! What the integration tests and benchmarks reach beyond the binary, and
//! nothing else (the library is otherwise the crate's own): real Redis
//! processes and the proxy that cuts them, the scenario reader (an
//! outline, an external target's needs), and a synthetic run folder for
//! timing the trace read back.

use crate::events::advertised::Advertised;
use crate::events::binary::Encoder;
use crate::events::integrity::Check;
use crate::events::{csv, Event, Outcome};
use crate::store::records::{self, ArmRecord, RunRecord, RunState};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reference_api::Policy;
use std::io::{BufWriter, Write};
use std::path::Path;

pub use crate::stack::cluster::RedisCluster;
pub use crate::stack::proxy::Proxy;
pub use crate::stack::redis::RedisServer;

/// A failure of the helpers below, said in one line.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A scenario file's policy and each arm's name and URLs, as `Debug`
/// text: enough for a test to hold a scenario in the docs to the one
/// shipped in `scenarios/`.
#[derive(Debug, PartialEq, Eq)]
pub struct Outline {
    pub name: String,
    pub policy: String,
    pub arms: Vec<String>,
}

fn outline(s: &crate::scenario::Scenario) -> Outline {
    Outline {
        name: s.name.clone(),
        policy: format!("{:?}", s.policy),
        arms: s
            .arms
            .iter()
            .map(|a| format!("{}{:?}", a.name, a.urls))
            .collect(),
    }
}

/// The outline of scenario text read as `file` would be.
pub fn outline_text(file: &str, text: &str) -> Result<Outline, Error> {
    Ok(outline(&crate::scenario::parse(file, text)?))
}

/// The outline of a scenario file.
pub fn outline_file(path: &Path) -> Result<Outline, Error> {
    Ok(outline(&crate::scenario::read(path)?))
}

/// What a scenario of `[target] kind = "external"` asks of the stack it is
/// pointed at, as rlbench reads it: the opt-in off loopback, where the
/// load goes, the key's header, and the policy each arm is judged
/// against — what a deployment's files must agree with
/// (tests/it/deployment.rs).
#[derive(Debug)]
pub struct ExternalOutline {
    pub allow_remote: bool,
    /// The target's URLs, then each arm's own, as rlbench parsed them.
    pub urls: Vec<String>,
    /// `[target] path`, put on every URL.
    pub path: Option<String>,
    /// The header that carries the key, if one does.
    pub key_header: Option<String>,
    /// Each arm's policy, in the scenario's order.
    pub policies: Vec<Policy>,
}

/// The external target of a scenario file, read and validated as `rlbench
/// run` would; `None` when the scenario runs the reference API itself.
pub fn external_outline(path: &Path) -> Result<Option<ExternalOutline>, Error> {
    let s = crate::scenario::read(path)?;
    Ok(s.external.as_ref().map(|t| ExternalOutline {
        allow_remote: t.allow_remote,
        urls: (t.urls.iter())
            .chain(s.arms.iter().flat_map(|a| &a.urls))
            .map(|u| u.to_string())
            .collect(),
        path: t.path.clone(),
        key_header: t.template.key_header.as_ref().map(|h| h.to_string()),
        policies: s.arms.iter().map(|a| a.policy.clone()).collect(),
    }))
}

/// Writes a finished run folder at `root` holding one arm, `local`, whose
/// trace `events/<name>` (`.trace` binary, else CSV) carries `n` synthetic
/// events: `keys` keys at `rate` a second, about one in two admitted,
/// rate-limit headers on every answer.
pub fn synthetic_run(root: &Path, name: &str, n: u64, keys: u64, rate: u64) -> Result<(), Error> {
    folder(root, name, n, keys, rate)
}

/// How many events the trace at `path` holds, each read and checked.
pub fn count_events(path: &Path) -> Result<u64, Error> {
    let mut count = 0u64;
    for e in crate::events::read::read(path, Check::default())? {
        e?;
        count += 1;
    }
    Ok(count)
}

/// `rlbench report` on the run folder at `root` (verified, summarized,
/// rendered); the number its first arm admitted.
pub fn report_admitted(root: &Path) -> Result<u64, Error> {
    let (summary, _) = crate::app::commands::report::rebuild(root)?;
    Ok(summary.arms.first().map_or(0, |a| a.requests.admitted))
}

fn events(n: u64, keys: u64, rate: u64) -> impl Iterator<Item = Event> {
    let mut rng = SmallRng::seed_from_u64(1);
    let names: Vec<String> = (0..keys).map(|k| format!("customer-{k:04}")).collect();
    (0..n).map(move |seq| {
        let intended = seq * 1_000_000 / rate;
        let sent = intended + rng.random_range(5..60);
        let done = sent + rng.random_range(100..900);
        let admitted = rng.random_bool(0.5);
        Event {
            seq,
            key: names[rng.random_range(0..keys) as usize].clone(),
            replica: 0,
            intended_us: intended,
            sent_us: sent,
            done_us: done,
            status: if admitted { 200 } else { 429 },
            outcome: if admitted {
                Outcome::Admitted
            } else {
                Outcome::Rejected
            },
            error: None,
            advertised: Some(Advertised {
                limit: Some(10),
                window_s: Some(1),
                remaining: Some(rng.random_range(0..10)),
                reset_ms: Some(rng.random_range(0..1_000)),
                retry_after_ms: (!admitted).then_some(1_000),
                present: 1,
                malformed: 0,
            }),
            retry_of: None,
            agent: 0,
        }
    })
}

/// A run folder holding one arm whose trace is `name` in events/.
fn folder(root: &Path, name: &str, n: u64, keys: u64, rate: u64) -> Result<(), Error> {
    std::fs::create_dir_all(root.join("events"))?;
    let run = RunRecord {
        state: RunState::Finished,
        pid: None,
        scenario: "bench-trace".into(),
        started_at: "2026-12-01T00:00:00Z".into(),
        duration_s: (n / rate) as f64,
        partial: false,
        partial_reason: None,
        arms: vec!["local".into()],
    };
    records::write(&root.join("run.json"), &run)?;
    let arm = ArmRecord {
        name: "local".into(),
        mode: "local".into(),
        replicas: 1,
        policy: Some(Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        }),
        preset: None,
        aligned: true,
        epoch_offset_us: 0,
        epoch_uncertainty_us: 0,
        target_rps: rate as f64,
        send_window_s: (n / rate) as f64,
        interrupted: false,
        redis_fallbacks: None,
        redis_nodes: Vec::new(),
        limiter_metrics: None,
        lease_bound: None,
        unknown_history: false,
        faults: Vec::new(),
        probes: Vec::new(),
        replenish_lateness_us: 0,
        chunked_refill: false,
        chunks_on_epoch: false,
        clock_resolution_us: None,
        clock_skew_us: None,
        banked_tokens: 0,
        max_clock_uncertainty_us: None,
        not_sent: Default::default(),
        max_server_time_us: None,
        one_clock: false,
        remote_targets: Vec::new(),
        targets: Vec::new(),
        keys_declared: None,
        witnesses: records::DEFAULT_WITNESSES,
        retry: None,
        request_timeout_us: 0,
        scheduled: 0,
        count_rejected: false,
        clock_samples: Vec::new(),
        simulated_clock_rate_ppm: 0,
        declared_clock_rate_ppm: None,
        expect: Vec::new(),
        trace: None,
        unfinished: false,
        agents: Vec::new(),
        key_header: Some("X-Customer-Id".into()),
        key_in: None,
        spoof: None,
        rls: false,
        from_logs: false,
    };
    records::write(&root.join("events/local.json"), &arm)?;
    let file = std::fs::File::create(root.join("events").join(name))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    if name.ends_with(".trace") {
        Encoder::start(&mut out)?;
        let mut encoder = Encoder::default();
        for e in events(n, keys, rate) {
            encoder.write(&mut out, &e)?;
        }
    } else {
        out.write_all(csv::HEADER)?;
        for e in events(n, keys, rate) {
            csv::write_line(&mut out, &e)?;
        }
    }
    out.flush()?;
    Ok(())
}
