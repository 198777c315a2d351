//! Reading a long run back: 6 million synthetic events (1,000 keys at
//! 20,000/s for 5 minutes, about one in two admitted, rate-limit headers
//! on every answer) written as the binary trace and as CSV, then each read
//! back alone and as `rlbench report` does it (verified, summarized,
//! rendered). Printed as seconds and bytes. Run with
//! `cargo bench --bench trace` (add `-- 1000000` for another size,
//! `-- binary` or `-- csv` for one form).
#![allow(clippy::print_stdout)]

use rlbench::testing::{count_events, report_admitted, synthetic_run};
use std::time::Instant;

const KEYS: u64 = 1_000;
const RATE: u64 = 20_000;

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
        synthetic_run(&root, name, n, KEYS, RATE).unwrap();
        let path = root.join("events").join(name);
        let bytes = std::fs::metadata(&path).unwrap().len();
        let started = Instant::now();
        let count = count_events(&path).unwrap();
        let read_s = started.elapsed().as_secs_f64();
        assert_eq!(count, n);
        let started = Instant::now();
        let admitted = report_admitted(&root).unwrap();
        let report_s = started.elapsed().as_secs_f64();
        println!(
            "  {:<6} {:>5.0} MB  read {read_s:>5.2} s  rlbench report {report_s:>5.2} s  (admitted {})",
            form,
            bytes as f64 / 1e6,
            admitted
        );
    }
}
