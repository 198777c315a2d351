//! Reading a long run back: 6 million synthetic events (1,000 keys at
//! 20,000/s for 5 minutes, about one in two admitted, rate-limit headers
//! on every answer) written as the binary trace and as CSV, then each read
//! back alone and as `rlbench report` does it (verified, summarized,
//! rendered). Printed as seconds and bytes. Run with
//! `cargo bench --bench trace` (add `-- 1000000` for another size,
//! `-- binary` or `-- csv` for one form).
#![allow(clippy::print_stdout)]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reference_api::Policy;
use rlbench::events::advertised::Advertised;
use rlbench::events::binary::Encoder;
use rlbench::events::integrity::Check;
use rlbench::events::{csv, read::read, Event, Outcome};
use rlbench::store::records::{self, ArmRecord, RunRecord, RunState};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

const KEYS: u64 = 1_000;
const RATE: u64 = 20_000;

fn events(n: u64) -> impl Iterator<Item = Event> {
    let mut rng = SmallRng::seed_from_u64(1);
    let names: Vec<String> = (0..KEYS).map(|k| format!("customer-{k:04}")).collect();
    (0..n).map(move |seq| {
        let intended = seq * 1_000_000 / RATE;
        let sent = intended + rng.random_range(5..60);
        let done = sent + rng.random_range(100..900);
        let admitted = rng.random_bool(0.5);
        Event {
            seq,
            key: names[rng.random_range(0..KEYS) as usize].clone(),
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
fn folder(root: &Path, name: &str, n: u64) {
    std::fs::create_dir_all(root.join("events")).unwrap();
    let run = RunRecord {
        state: RunState::Finished,
        pid: None,
        scenario: "bench-trace".into(),
        started_at: "2026-12-01T00:00:00Z".into(),
        duration_s: (n / RATE) as f64,
        partial: false,
        partial_reason: None,
        arms: vec!["local".into()],
    };
    records::write(&root.join("run.json"), &run).unwrap();
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
        target_rps: RATE as f64,
        send_window_s: (n / RATE) as f64,
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
        max_clock_uncertainty_us: None,
        not_sent: Default::default(),
        max_server_time_us: None,
        one_clock: false,
        remote_targets: Vec::new(),
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
    records::write(&root.join("events/local.json"), &arm).unwrap();
    let file = std::fs::File::create(root.join("events").join(name)).unwrap();
    let mut out = BufWriter::with_capacity(1 << 20, file);
    if name.ends_with(".trace") {
        Encoder::start(&mut out).unwrap();
        let mut encoder = Encoder::default();
        for e in events(n) {
            encoder.write(&mut out, &e).unwrap();
        }
    } else {
        out.write_all(csv::HEADER).unwrap();
        for e in events(n) {
            csv::write_line(&mut out, &e).unwrap();
        }
    }
    out.flush().unwrap();
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(6_000_000);
    let dir = tempfile::tempdir().unwrap();
    // TRACE_BENCH_KEEP=DIR: the run folders are written there and kept
    // (to time `rlbench report DIR/local-trace` with other builds).
    let kept = std::env::var_os("TRACE_BENCH_KEEP").map(std::path::PathBuf::from);
    let base = kept.as_deref().unwrap_or(dir.path());
    println!("trace: {n} events, {KEYS} keys");
    // `-- binary` or `-- csv`: that form alone.
    let only: Option<String> = std::env::args()
        .skip(1)
        .find(|a| a == "binary" || a == "csv");
    let forms = [("binary", "local.trace"), ("csv", "local.csv")];
    for (form, name) in forms
        .into_iter()
        .filter(|(form, _)| only.as_deref().map_or(true, |o| o == *form))
    {
        let root = base.join(name.replace('.', "-"));
        folder(&root, name, n);
        let path = root.join("events").join(name);
        let bytes = std::fs::metadata(&path).unwrap().len();
        let started = Instant::now();
        let mut count = 0u64;
        for e in read(&path, Check::default()).unwrap() {
            e.unwrap();
            count += 1;
        }
        let read_s = started.elapsed().as_secs_f64();
        assert_eq!(count, n);
        let started = Instant::now();
        let (summary, _) = rlbench::app::commands::report::rebuild(&root).unwrap();
        let report_s = started.elapsed().as_secs_f64();
        println!(
            "  {:<6} {:>5.0} MB  read {read_s:>5.2} s  rlbench report {report_s:>5.2} s  (admitted {})",
            form,
            bytes as f64 / 1e6,
            summary.arms[0].requests.admitted
        );
    }
}
