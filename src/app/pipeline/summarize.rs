//! An arm's figures, expectations and record turned into its part of
//! summary.json (`store::summary`): the compute stage's last step before
//! anything is rendered.

use crate::analyze::{ArmFigures, Counts, Histograms, Percentiles};
use crate::gate::{Bound, Check};
use crate::report::hgrm;
use crate::store::records::ArmRecord;
use crate::store::summary::*;

fn hdr(h: &Histograms) -> Hdr {
    Hdr {
        latency_us: hgrm::encode(&h.latency),
        service_us: hgrm::encode(&h.service),
    }
}

fn latency(p: &Percentiles) -> Latency {
    Latency {
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
        p999: p.p999,
        max: p.max,
    }
}

/// The generator fell behind: achieved below 99% of the target, or the
/// typical request (schedule lag p50, ms) more than 10 ms late. A closed
/// loop (target 0) has no schedule to fall behind.
pub(crate) fn saturated(achieved_rps: f64, target_rps: f64, lag_p50_ms: f64) -> bool {
    target_rps > 0.0
        && (achieved_rps < SATURATED_BELOW * target_rps || lag_p50_ms > SATURATED_LAG_P50_MS)
}

/// What the policy's text leaves out of the limiter's timing, in words
/// (none when nothing is judged).
fn timing_words(run: &ArmRecord) -> String {
    let mut words = String::new();
    if run.policy.is_none() {
        return words;
    }
    if run.count_rejected {
        words.push_str(", rejected attempts counted");
    }
    // (A preset's chunks are in its own words already.)
    if run.chunked_refill && run.preset.is_none() {
        words.push_str(if run.chunks_on_epoch {
            ", in whole chunks on the epoch"
        } else {
            ", in whole chunks"
        });
    }
    if run.banked_tokens > 0 {
        words.push_str(&format!(
            ", and up to {} more at once: released ASP.NET Core banks the tokens of time \
             spent full (dotnet/runtime#74360)",
            run.banked_tokens
        ));
    }
    words.push_str(", ");
    words.push_str(&super::slack::Slack::of(run).words());
    words
}

pub(crate) fn arm_summary(run: &ArmRecord, f: &ArmFigures, checks: &[Check]) -> ArmSummary {
    let c = &f.counts;
    let per_s = |n: u64| {
        if run.send_window_s > 0.0 {
            n as f64 / run.send_window_s
        } else {
            0.0
        }
    };
    // The schedule's requests: retries are the callers' own, not asked of it.
    let first = c.sent - f.tries.retries.min(c.sent);
    // Open loop: the target, times the share of its requests sent. (Sent
    // over the span from the first send to the last would call 150 sent in
    // 2.98 s "50.3 of 50".)
    let achieved = if run.target_rps > 0.0 && run.scheduled > 0 {
        run.target_rps * first.min(run.scheduled) as f64 / run.scheduled as f64
    } else {
        per_s(first)
    };
    // One decimal, or three significant digits below 1 request/s.
    let round = |v: f64| {
        if v.abs() >= 1.0 || v == 0.0 {
            (v * 10.0).round() / 10.0
        } else {
            let scale = 10f64.powi(2 - v.abs().log10().floor() as i32);
            (v * scale).round() / scale
        }
    };
    ArmSummary {
        limiter_metrics: f.metrics.clone(),
        name: run.name.clone(),
        mode: run.mode.clone(),
        replicas: run.replicas,
        policy: run.policy.clone(),
        policy_text: match (&run.policy, &run.preset) {
            (None, _) => NOT_JUDGED.to_string(),
            (Some(p), None) => p.describe(),
            (Some(p), Some(preset)) => format!("{preset} = {}", p.describe()),
        } + &timing_words(run),
        partial: run.interrupted || run.agents.iter().any(|a| a.incomplete().is_some()),
        requests: requests(f),
        rate: Rate {
            target_rps: run.target_rps,
            achieved_rps: round(achieved),
            // What a lost agent never sent is its loss, not the generator
            // falling behind (it is said apart, as not sent).
            generator_saturated: c.sent > 0
                && saturated(
                    achieved
                        + if run.scheduled > 0 {
                            run.target_rps * run.not_sent.lost as f64 / run.scheduled as f64
                        } else {
                            0.0
                        },
                    run.target_rps,
                    f.lag.p50,
                ),
            scheduled: run.scheduled,
            not_sent: run.not_sent,
        },
        correctness: correctness(f),
        latency_ms: latency(&f.latency),
        service_ms: latency(&f.service),
        schedule_lag_ms: latency(&f.lag),
        per_replica: per_replica(run, f),
        redis_errors: redis_errors(run),
        histograms: hdr(&f.histograms),
        expect: expect(checks),
        faults: faults(run, f),
        // A rate-limit service's answers have no HTTP headers to hold, and
        // access logs keep none.
        headers: if run.rls || run.from_logs {
            Default::default()
        } else {
            f.headers.clone()
        },
        goodput: run
            .retry
            .clone()
            .or_else(|| (f.tries.retries > 0).then(|| "retried".to_string()))
            .map(|retry| Goodput {
                retry,
                requests: f.tries.first,
                retries: f.tries.retries,
                first_try_admitted: f.tries.first_admitted,
                eventually_admitted: f.tries.admitted,
                gave_up: f.tries.first.saturating_sub(f.tries.admitted),
                attempts_rps: round(per_s(c.sent)),
                first_try_rps: round(per_s(f.tries.first_admitted)),
                eventual_rps: round(per_s(f.tries.admitted)),
            }),
        redis: f.redis.clone(),
        lease_bound: f.lease_bound.clone(),
        remote_targets: run.remote_targets.clone(),
        targets: run.targets.clone(),
        keys_declared: run.keys_declared,
        from_logs: run.from_logs,
        per_agent: per_agent(run, f),
        keys: (f.first_requests.keys > 0).then(|| KeyUse {
            keys: f.first_requests.keys,
            first_limited: f.first_requests.limited,
            key_header: run.key_header.clone(),
            key_in: run.key_in.clone(),
            stuck: (!f.first_requests.stuck.is_empty()).then(|| {
                let fr = &f.first_requests;
                crate::store::summary::Stuck {
                    keys: fr.stuck.len() as u64,
                    named: fr
                        .stuck
                        .iter()
                        .take(crate::store::summary::STUCK_NAMED)
                        .map(|(n, _)| n.clone())
                        .collect(),
                    longest_s: round(fr.stuck[0].1 as f64 / 1e6),
                }
            }),
        }),
        spoofing: spoofing(run, f),
        // Filled by the finish, which knows what the arm was expected to do.
        policy_fit: None,
        clock: Some(ClockRate {
            measured_ppm: crate::events::clock::measured_ppm(&run.clock_samples),
            samples: run.clock_samples.len(),
            simulated_ppm: run.simulated_clock_rate_ppm,
            declared_ppm: run.declared_clock_rate_ppm,
            allowed_ppm: run.clock_allowance_ppm(),
        }),
        phases: phases(f),
    }
}

/// What was sent and how it was answered.
fn requests(f: &ArmFigures) -> Requests {
    let c = &f.counts;
    Requests {
        sent: c.sent,
        admitted: c.admitted,
        rejected: c.rejected,
        errors: c.errors,
        timeouts: c.timeouts,
        errors_by_kind: f
            .errors_by_kind
            .iter()
            .map(|(k, n)| (k.name().to_string(), *n))
            .collect(),
        status_codes: f
            .statuses
            .iter()
            .map(|(s, n)| (s.to_string(), *n))
            .collect(),
        error_status_codes: f
            .error_statuses
            .iter()
            .map(|(s, n)| (s.to_string(), *n))
            .collect(),
    }
}

/// The verifier's verdict, when there was a policy to judge against.
fn correctness(f: &ArmFigures) -> Option<Correctness> {
    f.verdict.as_ref().map(|v| Correctness {
        allowed_max: v.allowed_max,
        over_admission_ratio: v.over_admission_ratio(),
        replay_admits: v.replay_admits,
        peak_window_ratio: v.peak_window_ratio,
        definite_violations: v.definite_violations,
        possible_violations: v.possible_violations,
        false_rejects: v.false_rejects,
        false_reject_ratio: v.false_reject_ratio(),
        too_slow: f
            .too_slow
            .as_ref()
            .filter(|_| v.slow_admits > 0)
            .map(|t| TooSlow {
                admits: v.slow_admits,
                from_ms: t.from_us as f64 / 1e3,
                left: t.left.clone(),
            }),
        witnesses: f.witnesses.clone(),
    })
}

/// Each replica's answers, Redis errors and histograms.
fn per_replica(run: &ArmRecord, f: &ArmFigures) -> Vec<PerReplica> {
    f.per_replica
        .iter()
        .enumerate()
        .map(|(replica, r): (usize, &Counts)| PerReplica {
            replica,
            sent: r.sent,
            admitted: r.admitted,
            rejected: r.rejected,
            errors: r.errors + r.timeouts,
            redis_errors: run
                .redis_fallbacks
                .as_ref()
                .and_then(|f| f.get(replica))
                .map(|f| f.failed_open + f.failed_closed),
            histograms: f
                .per_replica_histograms
                .get(replica)
                .map_or_else(|| hdr(&Histograms::empty()), hdr),
        })
        .collect()
}

/// The replicas' Redis fallbacks added up (Redis modes only).
fn redis_errors(run: &ArmRecord) -> Option<RedisErrors> {
    run.redis_fallbacks.as_ref().map(|all| {
        let (open, closed) = all
            .iter()
            .fold((0, 0), |(o, c), f| (o + f.failed_open, c + f.failed_closed));
        RedisErrors {
            total: open + closed,
            failed_open: open,
            failed_closed: closed,
        }
    })
}

/// Each expectation as judged.
fn expect(checks: &[Check]) -> Vec<Expect> {
    checks
        .iter()
        .map(|check| Expect {
            expectation: check.expectation.key.to_string(),
            figure: check.expectation.figure.name().to_string(),
            kind: match check.expectation.bound {
                Bound::AtMost => "max",
                Bound::AtLeast => "min",
            }
            .to_string(),
            bound: check.expectation.value,
            value: check.value,
            passed: check.passed,
            detail: check.describe(),
        })
        .collect()
}

/// `[load] spoof`: the keys sent, and their verdict judged as sent.
fn spoofing(run: &ArmRecord, f: &ArmFigures) -> Option<Spoofing> {
    run.spoof.as_ref().map(|spoofed| Spoofing {
        spoofed: spoofed.clone(),
        keys_sent: f.first_requests.keys,
        per_key_sent: f.per_key_sent.as_ref().map(|v| KeySentVerdict {
            definite_violations: v.definite_violations,
            false_rejects: v.false_rejects,
        }),
    })
}

/// Before, during and after each fault.
fn phases(f: &ArmFigures) -> Vec<Phase> {
    f.phases
        .iter()
        .map(|p| Phase {
            name: p.name.clone(),
            from_s: p.from_us.map(seconds),
            to_s: p.to_us.map(seconds),
            sent: p.counts.sent,
            admitted: p.counts.admitted,
            rejected: p.counts.rejected,
            errors: p.counts.errors + p.counts.timeouts,
            p99_ms: p.latency.p99,
            definite_violations: p.verdict.map(|v| v.definite_violations),
            false_rejects: p.verdict.map(|v| v.false_rejects),
        })
        .collect()
}

fn seconds(us: i64) -> f64 {
    (us as f64 / 1_000.0).round() / 1_000.0
}

/// Recovery figures follow the applied faults in order.
fn faults(run: &ArmRecord, f: &ArmFigures) -> Vec<FaultSummary> {
    let mut recovery = f.recovery_ms.iter();
    run.faults
        .iter()
        .map(|a| FaultSummary {
            fault: a.fault.clone(),
            from_s: seconds(a.from_us as i64),
            to_s: seconds(a.to_us as i64),
            applied: a.applied,
            error: a.error.clone(),
            recovery_ms: if a.applied {
                recovery.next().copied().flatten()
            } else {
                None
            },
        })
        .collect()
}

/// The arm's load agents, each with its share of the figures.
fn per_agent(run: &ArmRecord, f: &ArmFigures) -> Vec<crate::store::summary::PerAgent> {
    let ms = |us: i64| (us as f64 / 10.0).round() / 100.0;
    run.agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let fig = f.per_agent.get(i).cloned().unwrap_or_default();
            // As the arm's: its share of the target, times the share of its
            // segment it sent.
            let achieved = if run.target_rps > 0.0 && a.scheduled > 0 && a.of > 0 {
                run.target_rps / a.of as f64 * fig.counts.sent.min(a.scheduled) as f64
                    / a.scheduled as f64
            } else {
                let window_s = fig.last_sent_us.saturating_sub(fig.first_intended_us) as f64 / 1e6;
                if window_s > 0.0 {
                    fig.counts.sent as f64 / window_s
                } else {
                    0.0
                }
            };
            crate::store::summary::PerAgent {
                agent: a.name.clone(),
                host: a.host.clone(),
                segment: a.segment,
                of: a.of,
                sent: fig.counts.sent,
                admitted: fig.counts.admitted,
                rejected: fig.counts.rejected,
                errors: fig.counts.errors + fig.counts.timeouts,
                achieved_rps: (achieved * 10.0).round() / 10.0,
                schedule_lag_p99_ms: fig.lag.p99,
                clock_offset_ms: ms(a.wall_offset_us),
                clock_uncertainty_ms: ms(a.uncertainty_us),
                clock_estimated: a.clock_estimated,
                lost_at_s: a.lost_at_s,
                failed: a.failed.clone(),
                taken_over: a.taken_over.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::saturated;

    #[test]
    fn saturation_starts_below_99_percent_or_above_10_ms_of_typical_lag() {
        // The boundary itself is not saturated.
        assert!(!saturated(990.0, 1000.0, 10.0));
        assert!(saturated(989.9, 1000.0, 0.1));
        assert!(saturated(1000.0, 1000.0, 10.01), "lag p50");
        assert!(!saturated(1003.0, 1000.0, 0.2));
        // A closed loop has no target to miss.
        assert!(!saturated(55_000.0, 0.0, 0.0));
    }
}
