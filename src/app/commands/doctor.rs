//! `rlbench doctor [SCENARIO]`: what load tests trip on, checked on this
//! machine — the programs rlbench and its tests start (redis-server, nginx,
//! Chromium) with their versions, the open-files limit against the
//! connections a scenario may hold, the ephemeral port range, the CPUs the
//! generator shares with the stack, the frequency governor (where the
//! machine says). With a scenario, what that scenario needs and nothing
//! else: its targets must answer and its Redis be there; the tests'
//! programs (nginx, Chromium), and redis-server when no arm needs one, are
//! left out. Each is ok, warn or missing, with the fix; missing means a run
//! would stop on it.

use super::ending::{self, Ending};
use crate::app::pipeline::preflight;
use crate::report::doctor::{Finding, Level};
use crate::scenario::Scenario;
use std::process::Command;

fn finding(level: Level, what: &str, detail: impl Into<String>) -> Finding {
    Finding {
        level,
        what: what.to_string(),
        detail: detail.into(),
    }
}

/// The machine's facts, and `scenario`'s needs when one is given.
pub(crate) async fn examine(scenario: Option<&Scenario>) -> Vec<Finding> {
    let mut out = Vec::new();
    let redis_arms: Vec<&str> = match scenario {
        Some(s) => s
            .arms
            .iter()
            .filter(|a| s.needs_managed_redis(a))
            .map(|a| a.name.as_str())
            .collect(),
        // The main scenario's Redis arms.
        None => vec!["redis-naive", "redis-lua (scenarios/three-replicas.toml)"],
    };
    if scenario.is_none() || !redis_arms.is_empty() {
        out.push(program(
            "redis-server",
            &["--version"],
            (!redis_arms.is_empty()).then(|| format!("arms {}", redis_arms.join(", "))),
            "sudo apt-get install redis-server (Fedora: dnf install redis; macOS: brew install redis)",
        ));
    }
    // Needed by the tests and the nginx demo, not by a run: said only
    // for the machine, not for a scenario.
    if scenario.is_none() {
        out.push(program(
            "nginx",
            &["-v"],
            None,
            "sudo apt-get install nginx-light (scripts/test.sh installs it): the nginx demo and tests",
        ));
        out.push(program(
            "chromium",
            &["--version"],
            None,
            "sudo apt-get install chromium (scripts/test.sh installs it): the report test",
        ));
    }
    // Read before the preflight below raises this process's soft limit.
    let connections = scenario.map_or(0, preflight::most_connections);
    let files = open_files(connections);
    if let Some(s) = scenario {
        if let Err(e) = preflight::ensure(s, &s.arms.iter().collect::<Vec<_>>()).await {
            // Programs and open files are reported apart; the rest here.
            for line in e.message.split("\nrlbench: ") {
                if !line.contains("needs redis-server") && !line.contains("open-files limit") {
                    let what = if line.contains("Redis") {
                        "redis"
                    } else {
                        "target"
                    };
                    out.push(finding(Level::Missing, what, line));
                }
            }
        }
    }
    out.push(files);
    out.push(ports(connections));
    out.push(cpus());
    out.extend(governor());
    out.push(wall_clock_rate().await);
    out
}

/// How fast the wall clock runs against the monotonic one, over a second:
/// NTP daemons slew it for a while when they correct an offset (0.5 % has
/// been seen on these machines). rlbench measures this during every run
/// and allows for it; a limiter on a host it cannot sample is allowed
/// `[checks] clock_rate_ppm` (default [`DEFAULT_REMOTE_CLOCK_RATE_PPM`]).
async fn wall_clock_rate() -> Finding {
    use crate::events::clock::{measured_ppm, DEFAULT_REMOTE_CLOCK_RATE_PPM};
    let start = tokio::time::Instant::now();
    let first = crate::load::clock_watch::sample(start);
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let last = crate::load::clock_watch::sample(start);
    let Some(ppm) = measured_ppm(&[first, last]) else {
        return finding(Level::Warn, "wall clock", "its rate could not be measured");
    };
    if ppm > DEFAULT_REMOTE_CLOCK_RATE_PPM {
        finding(
            Level::Warn,
            "wall clock",
            format!(
                "runs {ppm} ppm off the monotonic clock: it is being slewed (NTP correcting an \
                 offset). Runs here allow for what they measure; clocks on other hosts are \
                 assumed within [checks] clock_rate_ppm (default {DEFAULT_REMOTE_CLOCK_RATE_PPM}), \
                 which this machine's would exceed"
            ),
        )
    } else {
        finding(
            Level::Ok,
            "wall clock",
            format!("runs within {ppm} ppm of the monotonic clock"),
        )
    }
}

/// Whether every needed piece is there (exit 0) or not (exit 3).
pub(crate) fn passed(findings: &[Finding]) -> bool {
    findings.iter().all(|f| f.level != Level::Missing)
}

/// A program on PATH and its version; `needed_by` makes its absence a
/// missing piece rather than a warning.
fn program(name: &str, version_args: &[&str], needed_by: Option<String>, fix: &str) -> Finding {
    let Some(path) = preflight::find_on_path(name) else {
        return match needed_by {
            Some(by) => finding(Level::Missing, name, format!("needed by {by}: {fix}")),
            None => finding(Level::Warn, name, format!("not on PATH: {fix}")),
        };
    };
    let version = Command::new(&path)
        .args(version_args)
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    finding(Level::Ok, name, format!("{version} ({})", path.display()))
}

fn open_files(connections: u64) -> Finding {
    use nix::sys::resource::{getrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return finding(Level::Warn, "open files", "the limit cannot be read");
    };
    let need = connections + 64;
    let have = format!("soft limit {soft}, hard {hard}");
    if connections == 0 {
        return finding(
            Level::Ok,
            "open files",
            format!("{have} (give a scenario to check its needs)"),
        );
    }
    if soft >= need {
        finding(
            Level::Ok,
            "open files",
            format!("{have}; the scenario may hold {connections} connections"),
        )
    } else if hard >= need {
        finding(
            Level::Warn,
            "open files",
            format!(
                "{have} < {need} for the scenario's {connections} connections: rlbench raises its \
                 own soft limit, other tools on this shell will not — `ulimit -n {need}`"
            ),
        )
    } else {
        finding(
            Level::Missing,
            "open files",
            format!(
                "{have} < {need} for the scenario's {connections} connections: `ulimit -n {need}` \
                 as root (or LimitNOFILE=), or lower [load] max_in_flight"
            ),
        )
    }
}

fn ports(connections: u64) -> Finding {
    let Ok(text) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range") else {
        return finding(Level::Ok, "ephemeral ports", "range not readable here");
    };
    let range: Vec<u64> = text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [lo, hi] = range[..] else {
        return finding(
            Level::Warn,
            "ephemeral ports",
            format!("unexpected range {text:?}"),
        );
    };
    let count = hi.saturating_sub(lo) + 1;
    let detail = format!("{lo}-{hi} ({count} ports)");
    if connections > 0 && count < connections * 2 {
        finding(
            Level::Warn,
            "ephemeral ports",
            format!(
                "{detail}: tight for {connections} connections and their TIME_WAIT — \
                 sysctl net.ipv4.ip_local_port_range=\"1024 65535\""
            ),
        )
    } else {
        finding(Level::Ok, "ephemeral ports", detail)
    }
}

fn cpus() -> Finding {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n <= 2 {
        finding(
            Level::Warn,
            "CPUs",
            format!(
                "{n}: the generator, the replicas and Redis share them — high-rate figures \
                 measure the machine too (watch generator_saturated and schedule lag)"
            ),
        )
    } else {
        finding(
            Level::Ok,
            "CPUs",
            format!("{n}, shared by the generator, the replicas and Redis"),
        )
    }
}

/// The frequency governor; nothing where the machine does not say (a VM
/// or container), rather than an "ok" that checked nothing.
fn governor() -> Option<Finding> {
    let g =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").ok()?;
    Some(if g.trim() == "performance" {
        finding(Level::Ok, "CPU governor", "performance")
    } else {
        finding(
            Level::Warn,
            "CPU governor",
            format!(
                "{}: latency varies with the clock speed — cpupower frequency-set -g performance",
                g.trim()
            ),
        )
    })
}

/// `rlbench doctor [SCENARIO]`: what this machine lacks, each with its
/// fix; exit 3 when something is.
pub(super) async fn execute(
    scenario: Option<&std::path::Path>,
    format: crate::cli::output::OutputFormat,
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, crate::error::Error> {
    let loaded = scenario.map(crate::scenario::read).transpose()?;
    let findings = examine(loaded.as_ref()).await;
    ending::emit(
        out,
        format,
        &crate::report::fold::for_stdout(&crate::report::doctor::render(&findings), wide),
        &serde_json::json!({
            "passed": passed(&findings),
            "findings": findings,
        }),
    )?;
    Ok(Ending {
        exit: if passed(&findings) {
            crate::error::Exit::Passed
        } else {
            crate::error::Exit::Environment
        },
        errors: Vec::new(),
        last: None,
    })
}
