//! The one conversion layer: a scenario's arm, or `attack`'s checked
//! flags, turned into the engine's inputs for one arm ([`ArmSpec`]) — the
//! stack to start, the load plan, the faults, the probes, and what the
//! trace is judged by. Nothing downstream of here reads a scenario or a
//! flag.

pub(crate) mod identities;

use crate::error::Error;
use crate::faults::{Fault, FaultAction};
use crate::gate::Expectation;
use crate::load::request::Template;
use crate::load::schedule::Shape;
use crate::load::Plan;
use crate::scenario::{
    units, Arm, JwtSecret, KeyFrom as ArmKeyFrom, KeySpec, Mode, PolicyTiming, Scenario,
};
use crate::verify;
use reference_api::config::{Backend, ClockSource, RedisBackend, RedisMode};
use reference_api::identity::{JwtAlg, KeyFrom};
use reference_api::{Policy, ReplicaConfig};
use std::time::Duration;

/// Everything one arm needs, from any source.
pub(crate) struct ArmSpec {
    pub name: String,
    pub mode: Mode,
    /// Replicas (or external URLs) the load is spread over.
    pub replicas: usize,
    /// The reference API's replicas (and Redis) to start; `None` for
    /// targets rlbench does not run.
    pub stack: Option<StackSpec>,
    /// The load. With a stack of rlbench's own its targets are filled in
    /// once the replicas are up.
    pub plan: Plan,
    pub faults: Vec<Fault>,
    /// Retry-After probes after the load.
    pub probes: Probes,
    pub judged: Judged,
    pub expect: Vec<Expectation>,
    /// `[load] spoof`: principals under forged identities.
    pub spoof: Option<crate::store::records::Spoofed>,
    /// Log what the arm does (`run` does; `attack` prints only its table).
    pub announce: bool,
    /// `[target] metrics`: the limiter's own counters, read around the load.
    pub metrics: Option<crate::scenario::spec::MetricsSpec>,
}

/// The reference API's replicas for one arm.
pub(crate) struct StackSpec {
    pub configs: Vec<ReplicaConfig>,
    /// rlbench starts its own redis-server (or cluster).
    pub managed_redis: Option<crate::stack::Managed>,
    /// With a delaying proxy in front of that Redis.
    pub proxy: bool,
}

/// Keys whose Retry-After is probed after the load (none when empty).
pub(crate) struct Probes {
    pub keys: Vec<String>,
    pub max_wait: Duration,
}

/// What the trace is judged by, as the arm's record keeps it.
pub(crate) struct Judged {
    /// None: measured, not judged (`attack` without `--policy`).
    pub policy: Option<Policy>,
    pub preset: Option<String>,
    /// Every decision read this machine's wall clock.
    pub aligned: bool,
    /// The limiter may remember requests from before the run.
    pub unknown_history: bool,
    /// Late replenishment, chunked refill, and whether every decision read
    /// one clock inside its atomic step.
    pub timing: PolicyTiming,
    pub max_server_time_us: Option<i64>,
    pub witnesses: usize,
    /// `redis_batched`: the admits a window may hold, leases spent late
    /// included.
    pub lease_bound: Option<u64>,
    /// The replicas' clocks run this fast (ppm) on the wall clock: simulated.
    pub simulated_clock_rate_ppm: i64,
    /// `[checks] clock_rate_ppm`: a rate declared for clocks not sampled.
    pub declared_clock_rate_ppm: Option<i64>,
}

/// The scenario's arm as the engine's inputs. Redis keys start with a
/// prefix unique to the run and arm (`run_id`), so runs never see each
/// other's counts.
pub(crate) fn from_scenario(
    scenario: &Scenario,
    arm: &Arm,
    run_id: &str,
) -> Result<ArmSpec, Error> {
    let (stack, targets, mut template) = match &scenario.external {
        Some(external) => external_request(scenario, arm, &external.template)?,
        None => reference_stack(scenario, arm, run_id)?,
    };
    if scenario.external.as_ref().is_some_and(|e| e.fresh_keys) {
        // Fresh key values for each run and arm of a limiter rlbench did
        // not start: none of what it remembers is this arm's.
        template.key_tag = Some(crate::load::request::key_tag(run_id, &arm.name));
    }
    let keys = scenario.keys_of(arm);
    let probes = scenario.checks.retry_after_probes.min(keys) as usize;
    Ok(ArmSpec {
        name: arm.name.clone(),
        mode: arm.mode.clone(),
        replicas: arm.replicas,
        stack,
        plan: load_plan(scenario, arm, targets, template)?,
        faults: scenario.faults.clone(),
        metrics: scenario.metrics.clone(),
        probes: Probes {
            keys: crate::load::pick::key_names(keys)[..probes].to_vec(),
            max_wait: scenario.checks.retry_after_max_wait,
        },
        judged: judged(scenario, arm),
        expect: arm.expect.clone(),
        spoof: spoofed(scenario),
        announce: true,
    })
}

/// An arm's stack (none for a target rlbench does not run), the URLs the
/// load goes to (filled in later for its own stack), and the request.
type StackAndRequest = (Option<StackSpec>, Vec<hyper::Uri>, Template);

/// An external target's request, with each key's identities in it.
fn external_request(
    scenario: &Scenario,
    arm: &Arm,
    template: &Template,
) -> Result<StackAndRequest, Error> {
    let mut template = template.clone();
    if let Some(keep) = arm.keep_alive {
        template.keep_alive = keep;
    }
    identities(&mut template, scenario, arm)?;
    if template.sources.is_some()
        && matches!(
            scenario.load.shape,
            crate::load::schedule::Shape::Closed { .. }
        )
    {
        return Err(Error::input(
            "[load] key = { source_ip }: needs an open loop (rate), not concurrency",
        ));
    }
    Ok((None, arm.urls.clone(), template))
}

/// The reference API's replicas (and Redis) for the arm, and the request
/// they are sent: the key in the key header, a JWT or X-Forwarded-For.
fn reference_stack(scenario: &Scenario, arm: &Arm, run_id: &str) -> Result<StackAndRequest, Error> {
    let key_header = arm
        .key_header
        .parse()
        .map_err(|_| Error::input(format!("bad key header {:?}", arm.key_header)))?;
    let managed_redis = scenario.managed_redis(arm);
    let stack = StackSpec {
        configs: replica_configs(scenario, arm, run_id),
        managed_redis,
        proxy: managed_redis.is_some() && scenario.faults.iter().any(|f| f.action.needs_proxy()),
    };
    let mut template = Template::new(hyper::Method::POST, Some(key_header));
    // A JWT or X-Forwarded-For key: the replicas read it there
    // (beside the key header under spoofing).
    match &scenario.load.key {
        _ if scenario.load.spoof.is_some() => {}
        KeySpec::Jwt(_) => {
            template.key_header = Some(hyper::header::AUTHORIZATION);
            template.key_affix = ("Bearer ".into(), String::new());
        }
        KeySpec::ForwardedFor => {
            template.key_header = Some(hyper::header::HeaderName::from_static("x-forwarded-for"));
        }
        _ => {}
    }
    identities(&mut template, scenario, arm)?;
    Ok((Some(stack), Vec::new(), template))
}

/// The load for the arm: the scenario's schedule, keys and callers, sent
/// with `template` to `targets`.
fn load_plan(
    scenario: &Scenario,
    arm: &Arm,
    targets: Vec<hyper::Uri>,
    template: Template,
) -> Result<Plan, Error> {
    Ok(Plan {
        targets,
        template,
        shape: shape_for(scenario, arm),
        duration: scenario.duration,
        keys: scenario.keys_of(arm),
        forged: scenario.load.spoof.as_ref().map_or(0, |s| s.forged_keys),
        key_distribution: arm
            .key_distribution
            .unwrap_or(scenario.load.key_distribution),
        fanout: arm.fanout,
        seed: scenario.seed,
        timeout: scenario.load.timeout,
        max_in_flight: scenario.load.max_in_flight,
        retry: scenario.load.retry.clone(),
        segment: crate::load::Segment::WHOLE,
        phase_us: None,
        tls: match &scenario.external {
            Some(external) => crate::load::tls::for_targets(&arm.urls, &external.tls)
                .map_err(|e| Error::input(format!("[target]: {e}")))?,
            None => None,
        },
    })
}

/// What the arm's trace is judged by, as its record keeps it.
fn judged(scenario: &Scenario, arm: &Arm) -> Judged {
    Judged {
        policy: Some(arm.policy.clone()),
        preset: arm.preset.clone(),
        aligned: clocks_known_aligned(scenario, arm),
        // Replicas (and a managed Redis) start empty; a Redis given by
        // URL is under a prefix of its own for this run. An external
        // limiter may remember requests from before the run.
        unknown_history: arm.mode == Mode::External,
        timing: PolicyTiming {
            one_clock: one_clock(scenario, arm),
            ..arm.timing
        },
        max_server_time_us: scenario
            .checks
            .max_server_time
            .map(|d| d.as_micros().min(i64::MAX as u128) as i64),
        witnesses: scenario.checks.witnesses,
        lease_bound: arm.lease_bound(),
        simulated_clock_rate_ppm: arm.clock_rate_ppm,
        declared_clock_rate_ppm: scenario.checks.clock_rate_ppm,
    }
}

/// `[load] spoof`: the principals and the identities they forge, as the
/// arm's record keeps them.
fn spoofed(scenario: &Scenario) -> Option<crate::store::records::Spoofed> {
    scenario
        .load
        .spoof
        .as_ref()
        .map(|s| crate::store::records::Spoofed {
            principals: scenario.load.keys,
            forged_keys: s.forged_keys,
            forged: [
                s.rotate_key.then(|| "the key".to_string()),
                s.forwarded_for.then(|| "X-Forwarded-For".to_string()),
            ]
            .into_iter()
            .flatten()
            .collect(),
            own: matches!(scenario.load.key, KeySpec::Jwt(_)).then(|| "a JWT of its own".into()),
        })
}

/// Each of the arm's keys' identities as `[load] key` and `spoof` say.
fn identities(template: &mut Template, scenario: &Scenario, arm: &Arm) -> Result<(), Error> {
    let load = &scenario.load;
    match &load.spoof {
        Some(spoof) => identities::spoof(template, &load.key, spoof, load.keys),
        None => identities::apply(template, &load.key, scenario.keys_of(arm)),
    }
}

/// What each replica of `arm` is told; with a managed Redis the URL is
/// filled in once the server is up.
pub(crate) fn replica_configs(scenario: &Scenario, arm: &Arm, run_id: &str) -> Vec<ReplicaConfig> {
    let backend = match arm.mode {
        Mode::Local | Mode::External => Backend::Local,
        Mode::RedisNaive | Mode::RedisLua | Mode::RedisBatched => Backend::Redis(RedisBackend {
            url: scenario.redis.url.clone().unwrap_or_default(),
            topology: scenario.redis.topology,
            prefix: format!("rlbench:{run_id}:{}:", arm.name),
            mode: match arm.mode {
                Mode::RedisLua => RedisMode::Lua,
                Mode::RedisBatched => RedisMode::Batched,
                _ => RedisMode::Naive,
            },
            clock: arm.clock,
            timeout_us: units::micros(scenario.redis.timeout),
            on_error: arm.on_redis_error,
            wait_replicas: arm.wait_replicas,
            deadline: arm.deadline_aware,
            lease: arm.lease,
            lease_ttl_us: units::micros(arm.lease_ttl),
        }),
    };
    (0..arm.replicas)
        .map(|i| {
            let mut c = ReplicaConfig::new(format!("r{i}"), arm.policy.clone());
            c.key_header = arm.key_header.clone();
            c.key_from = match (arm.key_from, &scenario.load.key) {
                (Some(ArmKeyFrom::Header), _) => KeyFrom::Header,
                (Some(ArmKeyFrom::ForwardedFor), _) => KeyFrom::ForwardedFor,
                (Some(ArmKeyFrom::Jwt) | None, KeySpec::Jwt(j)) => match &j.secret {
                    JwtSecret::Shared(secret) => KeyFrom::JwtClaim {
                        claim: j.claim.clone(),
                        alg: JwtAlg::HS256,
                        secret: Some(secret.clone()),
                        public_key: None,
                    },
                    // (Refused when the scenario is read.)
                    JwtSecret::PrivateKey(_) => KeyFrom::Header,
                },
                (None, KeySpec::ForwardedFor) => KeyFrom::ForwardedFor,
                _ => KeyFrom::Header,
            };
            c.clock_skew_us = arm.skew_of(i);
            c.clock_rate_ppm = arm.clock_rate_ppm;
            c.ratelimit_headers = arm.ratelimit_headers;
            c.lossy_metrics = arm.lossy_metrics;
            c.otlp = arm.otlp.clone();
            c.backend = backend.clone();
            // rlbench steps replica clocks itself (clock_step faults).
            c.admin = true;
            c
        })
        .collect()
}

/// The arm's own schedule, else the scenario's: bursts straddle the edges
/// of the arm's own policy window.
fn shape_for(scenario: &Scenario, arm: &Arm) -> Shape {
    if let Some(own) = &arm.schedule {
        return own.clone();
    }
    match &scenario.load.shape {
        Shape::Bursts {
            per_edge, spread, ..
        } => Shape::Bursts {
            per_edge: *per_edge,
            spread: *spread,
            window: Duration::from_micros(verify::window(&arm.policy).1.max(1) as u64),
        },
        other => other.clone(),
    }
}

/// Epoch-aligned windows line up with the trace only when every decision
/// reads this machine's wall clock: no skew, and a Redis clock that is ours
/// (a managed or loopback server).
fn clocks_known_aligned(scenario: &Scenario, arm: &Arm) -> bool {
    let redis_is_local = match &scenario.redis.url {
        None => true,
        Some(url) => ["redis://127.", "redis://localhost", "redis://[::1]"]
            .iter()
            .any(|p| url.starts_with(p)),
    };
    // A stepped replica clock shifts its windows off the epoch grid.
    let stepped = arm.clock == ClockSource::Replica
        && scenario
            .faults
            .iter()
            .any(|f| matches!(f.action, FaultAction::ClockStep { .. }));
    let ours = match arm.mode {
        Mode::Local => true,
        Mode::RedisNaive | Mode::RedisLua | Mode::RedisBatched => redis_is_local,
        // Another process's clock and windows (maybe anchored at first
        // hit): unknown, unless it is declared to be this machine's clock
        // and the policy declares what aligns to it (a bucket's chunks on
        // the epoch; a window's alignment is not declared).
        Mode::External => {
            arm.timing.chunks_on_epoch
                && scenario
                    .external
                    .as_ref()
                    .is_some_and(|t| t.wall_clock_here)
        }
    };
    arm.clocks_aligned() && !stepped && ours
}

/// Whether every decision reads one clock inside its atomic step: Redis'
/// TIME inside the Lua script, or what the target declares. A preset's
/// word (ASP.NET Core counts under one lock) holds only for that one
/// process: an external arm with one URL. (The reference API's replicas
/// read their clock before the state's lock, and a Redis arm on replica
/// clocks sends each replica's reading, whatever the policy is named.)
fn one_clock(scenario: &Scenario, arm: &Arm) -> bool {
    let external = arm.mode == Mode::External;
    let declared = external && scenario.external.as_ref().is_some_and(|t| t.one_clock);
    let one_process = external && arm.urls.len() == 1;
    (arm.mode == Mode::RedisLua && arm.clock == ClockSource::Redis)
        || (arm.timing.one_clock && one_process)
        || declared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged_one_clock(text: &str) -> Vec<bool> {
        let s = crate::scenario::parse("t.toml", text).unwrap();
        s.arms
            .iter()
            .map(|a| from_scenario(&s, a, "r").unwrap().judged.timing.one_clock)
            .collect()
    }

    const ASPNET: &str = r#"
name = "t"
duration = "1s"
[policy]
preset = "aspnetcore"
limiter = "sliding_window"
permit_limit = 10
window = "1s"
segments_per_window = 4
[load]
rate = 10
"#;

    /// An external target's arms tag their keys on the wire, each arm and
    /// each run its own tag; `fresh_keys = false` sends them untagged, and
    /// the reference API's arms never tag them.
    #[test]
    fn each_external_arm_of_each_run_sends_its_keys_under_its_own_tag() {
        let text = |fresh: &str| {
            format!(
                "name = \"t\"\nduration = \"1s\"\n[target]\nkind = \"external\"\n{fresh}\
                 urls = [\"http://127.0.0.1:9/x\"]\nkey_header = \"X-Key\"\n\
                 [policy]\nalgorithm = \"sliding_log\"\nlimit = 5\nwindow = \"1s\"\n\
                 [load]\nrate = 10\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"b\"\n"
            )
        };
        let tag = |text: &str, arm: usize, run: &str| {
            let s = crate::scenario::parse("t.toml", text).unwrap();
            from_scenario(&s, &s.arms[arm], run)
                .unwrap()
                .plan
                .template
                .key_tag
        };
        let fresh = text("");
        let a = tag(&fresh, 0, "run-1");
        assert!(a.is_some());
        assert_eq!(a, tag(&fresh, 0, "run-1"), "the same wherever computed");
        assert_ne!(a, tag(&fresh, 1, "run-1"));
        assert_ne!(a, tag(&fresh, 0, "run-2"));
        assert_eq!(tag(&text("fresh_keys = false\n"), 0, "run-1"), None);
        let s = crate::scenario::parse("t.toml", REFERENCE).unwrap();
        assert_eq!(
            from_scenario(&s, &s.arms[0], "r")
                .unwrap()
                .plan
                .template
                .key_tag,
            None
        );
    }

    /// A reference-API scenario, for what only external targets do.
    const REFERENCE: &str = r#"
name = "t"
duration = "1s"
[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"
[load]
rate = 10
[[arms]]
name = "one"
mode = "local"
"#;

    /// The preset's one clock is ASP.NET's lock; replicas of the reference
    /// API read their own clocks whatever the policy is called.
    #[test]
    fn the_aspnetcore_preset_is_one_clock_only_for_one_aspnet_process() {
        let reference = format!(
            "{ASPNET}[cluster]\nreplicas = 2\n[[arms]]\nname = \"lua\"\nmode = \"redis_lua\"\n[[arms]]\nname = \"local\"\nmode = \"local\"\n"
        );
        assert_eq!(judged_one_clock(&reference), [false, false]);
        let external = format!(
            "{ASPNET}[target]\nkind = \"external\"\nurls = [\"http://127.0.0.1:1\"]\n[[arms]]\nname = \"one\"\n[[arms]]\nname = \"two\"\nurls = [\"http://127.0.0.1:1\", \"http://127.0.0.1:2\"]\n"
        );
        assert_eq!(judged_one_clock(&external), [true, false]);
    }

    fn judged_aligned(text: &str) -> Vec<bool> {
        let s = crate::scenario::parse("t.toml", text).unwrap();
        s.arms
            .iter()
            .map(|a| from_scenario(&s, a, "r").unwrap().judged.aligned)
            .collect()
    }

    /// An external target's clock is known only when declared to be this
    /// machine's, and only what the policy declares aligned to it is taken
    /// as aligned: a bucket's chunks on the epoch, never a window.
    #[test]
    fn an_external_clock_is_this_machines_only_for_what_is_declared_on_it() {
        let scenario = |policy: &str, clock: &str| {
            format!(
                "name = \"t\"\nduration = \"1s\"\n[policy]\n{policy}\n[load]\nrate = 10\n\
                 [target]\nkind = \"external\"\nurls = [\"http://127.0.0.1:1\"]\n{clock}\n\
                 [[arms]]\nname = \"one\"\n"
            )
        };
        let epoch = "algorithm = \"token_bucket\"\ncapacity = 10\nrefill = \"5/s\"\n\
                     refill_every = \"1s\"\nrefill_aligned = \"epoch\"";
        let here = "wall_clock = \"this_machine\"";
        assert_eq!(judged_aligned(&scenario(epoch, here)), [true]);
        assert_eq!(judged_aligned(&scenario(epoch, "")), [false]);
        let first_hit = epoch.replace("epoch", "first_hit");
        assert_eq!(judged_aligned(&scenario(&first_hit, here)), [false]);
        let window = "algorithm = \"fixed_window\"\nlimit = 10\nwindow = \"1s\"";
        assert_eq!(judged_aligned(&scenario(window, here)), [false]);
    }

    /// An external target's arm with bursts of its own is sent them, the
    /// other arm the steady `[load]`, both with `[load]`'s keys and a
    /// connection per request; a third arm its own rate over keys of its
    /// own, on connections it keeps.
    #[test]
    fn an_arm_with_its_own_bursts_is_planned_with_them() {
        let s = crate::scenario::parse(
            "t.toml",
            r#"name = "mixed"
duration = "10s"
[target]
kind = "external"
urls = ["http://127.0.0.1:9/x"]
key_header = "X-Key"
keep_alive = false
[policy]
algorithm = "sliding_log"
limit = 10
window = "2s"
[load]
rate = 75
keys = 5
[[arms]]
name = "steady"
[[arms]]
name = "bursts"
schedule = "bursts"
burst = 100
burst_spread = "10ms"
[[arms]]
name = "many"
schedule = "constant"
rate = 1500
keys = 100
keep_alive = true
"#,
        )
        .unwrap();
        let plans: Vec<Plan> = s
            .arms
            .iter()
            .map(|a| from_scenario(&s, a, "r").unwrap().plan)
            .collect();
        assert_eq!(plans[0].shape, Shape::Constant { rate: 75.0 });
        assert_eq!(
            plans[1].shape,
            Shape::Bursts {
                per_edge: 100,
                spread: Duration::from_millis(10),
                window: Duration::from_secs(2),
            }
        );
        assert_eq!((plans[0].keys, plans[1].keys), (5, 5));
        assert_eq!(plans[2].shape, Shape::Constant { rate: 1500.0 });
        assert_eq!(plans[2].keys, 100);
        let kept: Vec<bool> = plans.iter().map(|p| p.template.keep_alive).collect();
        assert_eq!(
            kept,
            [false, false, true],
            "the fast arm keeps its connections"
        );
    }
}
