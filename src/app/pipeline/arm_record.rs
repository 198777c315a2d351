//! An arm's record: the provisional one written before its load (what a
//! kill leaves for `report`), and the finished one, what the load, the
//! faults, the probes and Redis gave added to it.

use crate::events::clock::ClockSample;
use crate::load::schedule::{Schedule, Shape};
use crate::load::{self, LoadReport};
use crate::plan::ArmSpec;
use crate::store::records::{
    AgentRecord, Applied, ArmRecord, Fallbacks, MetricsRecord, RedisNodeUse,
};

/// An arm's record before its load: everything but what the load finds,
/// marked unfinished (what a kill leaves for `report`).
pub(crate) fn provisional(spec: &ArmSpec, target_rps: f64, epoch: ClockSample) -> ArmRecord {
    let judged = &spec.judged;
    ArmRecord {
        name: spec.name.clone(),
        mode: spec.mode.as_str().to_string(),
        replicas: spec.replicas,
        policy: judged.policy.clone(),
        preset: judged.preset.clone(),
        aligned: judged.aligned,
        epoch_offset_us: epoch.wall_us - epoch.trace_us,
        epoch_uncertainty_us: epoch.uncertainty_us,
        target_rps,
        scheduled: 0,
        send_window_s: 0.0,
        interrupted: true,
        redis_fallbacks: None,
        redis_nodes: Vec::new(),
        lease_bound: judged.lease_bound,
        unknown_history: judged.unknown_history,
        faults: Vec::new(),
        probes: Vec::new(),
        replenish_lateness_us: judged.timing.lateness_us,
        chunked_refill: judged.timing.chunked_refill,
        chunks_on_epoch: judged.timing.chunks_on_epoch,
        max_clock_uncertainty_us: None,
        not_sent: Default::default(),
        clock_resolution_us: judged.timing.clock_resolution_us,
        clock_skew_us: judged.timing.clock_skew_us,
        banked_tokens: judged.timing.banked_tokens,
        count_rejected: judged.timing.count_rejected,
        max_server_time_us: judged.max_server_time_us,
        witnesses: judged.witnesses,
        one_clock: judged.timing.one_clock,
        remote_targets: spec
            .plan
            .targets
            .iter()
            .filter(|u| !crate::target::is_loopback(u))
            .map(ToString::to_string)
            .collect(),
        targets: if spec.mode == crate::scenario::Mode::External {
            spec.plan.targets.iter().map(where_sent).collect()
        } else {
            Vec::new()
        },
        keys_declared: Some(spec.plan.keys),
        retry: spec
            .plan
            .retry
            .as_ref()
            .map(|r| r.describe(&spec.plan.template.limited)),
        clock_samples: vec![epoch],
        simulated_clock_rate_ppm: judged.simulated_clock_rate_ppm,
        declared_clock_rate_ppm: judged.declared_clock_rate_ppm,
        request_timeout_us: spec.plan.timeout.as_micros().min(i64::MAX as u128) as i64,
        key_header: spec
            .plan
            .template
            .key_header
            .as_ref()
            .map(|h| h.as_str().to_string()),
        key_in: spec.plan.template.key_in(),
        spoof: spec.spoof.clone(),
        from_logs: false,
        rls: matches!(
            spec.plan.template.key_place,
            crate::load::request::KeyPlace::Rls { .. }
        ),
        expect: spec
            .expect
            .iter()
            .map(|e| (e.key.to_string(), e.value))
            .collect(),
        trace: None,
        unfinished: true,
        agents: Vec::new(),
        limiter_metrics: None,
    }
}

/// What an arm gave besides its events, to be recorded.
pub(crate) struct Gave {
    pub report: LoadReport,
    pub agents: Vec<AgentRecord>,
    pub max_clock_uncertainty_us: Option<i64>,
    pub faults: Vec<Applied>,
    pub probes: Vec<crate::store::probes::Probe>,
    pub clock_samples: Vec<ClockSample>,
    pub redis_nodes: Vec<RedisNodeUse>,
    pub redis_fallbacks: Option<Vec<Fallbacks>>,
    pub limiter_metrics: Option<MetricsRecord>,
    /// The trace's seal; `None` when it did not finish.
    pub seal: Option<crate::events::integrity::Seal>,
}

/// The provisional record with what the arm gave.
pub(crate) fn finished(plan: &load::Plan, provisional: ArmRecord, gave: Gave) -> ArmRecord {
    let report = gave.report;
    ArmRecord {
        epoch_offset_us: report.epoch_offset_us,
        epoch_uncertainty_us: report.epoch_uncertainty_us,
        scheduled: match plan.shape {
            Shape::Closed { .. } => 0,
            // The whole schedule (what the pacer reached, if cut short):
            // requests never sent for want of a free slot count as asked.
            _ if report.interrupted => report.scheduled,
            _ => Schedule::new(
                &plan.shape,
                plan.duration,
                plan.seed,
                report.epoch_offset_us,
            )
            .count() as u64,
        },
        send_window_s: report.send_window.as_secs_f64(),
        interrupted: report.interrupted,
        redis_fallbacks: gave.redis_fallbacks,
        redis_nodes: gave.redis_nodes,
        limiter_metrics: gave.limiter_metrics,
        faults: gave.faults,
        probes: gave.probes,
        clock_samples: gave.clock_samples,
        unfinished: gave.seal.is_none(),
        trace: gave.seal,
        agents: gave.agents,
        not_sent: report.not_sent,
        max_clock_uncertainty_us: gave.max_clock_uncertainty_us,
        ..provisional
    }
}

/// Where a request went, as a run keeps it to compare: scheme, host,
/// port and path — no user or password, no query (either may hold a
/// secret).
fn where_sent(u: &hyper::Uri) -> String {
    format!(
        "{}://{}{}",
        u.scheme_str().unwrap_or("http"),
        u.authority()
            .map_or("", |a| a.as_str().rsplit('@').next().unwrap_or("")),
        u.path()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_a_request_went_keeps_no_secret() {
        let u: hyper::Uri = "https://me:secret@127.0.0.1:8443/v1/limited?token=abc"
            .parse()
            .unwrap();
        assert_eq!(where_sent(&u), "https://127.0.0.1:8443/v1/limited");
        let plain: hyper::Uri = "http://127.0.0.1:8080/limited".parse().unwrap();
        assert_eq!(where_sent(&plain), "http://127.0.0.1:8080/limited");
    }
}
