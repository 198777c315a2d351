//! Raw scenario → engine types. Each check points at the offending value.

use super::raw::{RawCluster, RawPolicy, RawScenario};
use crate::load::pick::Fanout;
use crate::load::schedule::Shape;
use crate::scenario::spec::{Arm, ExternalTarget, LoadSpec, MetricsSpec};
use crate::scenario::spec::{Scenario, ScenarioError};
use arm::ArmDefaults;
use reference_api::config::DEFAULT_KEY_HEADER;
use reference_api::Policy;
use source::{identifier, skews, Result, Source, MAX_REPLICAS};
use std::collections::HashSet;
use std::time::Duration;
use toml::Spanned;

/// An error in text given inline (`--policy`, `--key-in`), said of the
/// text as given, not of the table wrapped around it.
fn shifted(text: &str) -> impl Fn(ScenarioError) -> ScenarioError + '_ {
    move |mut e: ScenarioError| {
        e.line = 0;
        e.message = format!("{text:?}: {}", e.message);
        e
    }
}

/// Inline `text`, wrapped into the table `src` holds, read as `T`.
fn read_inline<T: serde::de::DeserializeOwned>(src: &Source, text: &str) -> Result<T> {
    toml::from_str(src.text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let message = hints::friendlier(&message, src.text, e.span().map(|s| s.start));
        shifted(text)(src.error(e.span(), message))
    })
}

/// `--key-in` text: the keys of `[load] key`, comma-separated.
pub(super) fn inline_key(
    text: &str,
    template: crate::load::request::Template,
    keys: u32,
) -> Result<(
    crate::load::request::Template,
    crate::scenario::spec::KeySpec,
)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrapped {
        key: Spanned<super::raw::RawKey>,
    }
    let wrapped = format!("key = {{ {text} }}");
    let src = Source {
        file: "--key-in",
        text: &wrapped,
    };
    let raw: Wrapped = read_inline(&src, text)?;
    let given = template.key_header.is_some();
    let mut target = crate::scenario::spec::ExternalTarget::around(template);
    let key = key::apply(&src, &raw.key, &mut target, given, keys).map_err(shifted(text))?;
    Ok((target.template, key))
}

/// `--policy` text: the keys of a `[policy]` table, comma-separated.
pub(super) fn inline_policy(text: &str) -> Result<(Policy, crate::scenario::spec::PolicyTiming)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrapped {
        policy: Spanned<RawPolicy>,
    }
    const OPEN: &str = "policy = { ";
    let wrapped = format!("{OPEN}{text} }}");
    let src = Source {
        file: "--policy",
        text: &wrapped,
    };
    let shift = shifted(text);
    let raw: Wrapped = read_inline(&src, text)?;
    if raw.policy.get_ref().algorithm.is_none() && raw.policy.get_ref().preset.is_none() {
        return Err(shift(src.error(
            None,
            "name the algorithm, e.g. algorithm = \"sliding_log\", limit = 10, window = \"1s\"",
        )));
    }
    let policy = policy::policy(&src, raw.policy.span(), raw.policy.get_ref()).map_err(&shift)?;
    let timing = policy::timing(&src, raw.policy.get_ref()).map_err(&shift)?;
    Ok((policy, timing))
}

pub(super) fn scenario(file: &str, text: &str) -> Result<Scenario> {
    let src = Source { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let message = hints::friendlier(&message, text, e.span().map(|s| s.start));
        src.error(e.span(), message)
    })?;

    let name = identifier(&src, &raw.name, "scenario name")?;
    let reading = Reading {
        src: &src,
        raw: &raw,
    };
    let (mut external, metrics) = reading.target()?;
    let duration = src.duration(&raw.duration)?;
    let seed = match &raw.seed {
        Some(s) => src.count(s, "seed", 0, i64::MAX)?,
        None => 1,
    };
    let policy = policy::policy(&src, raw.policy.span(), raw.policy.get_ref())?;
    let no_cluster = RawCluster::default();
    let cluster = raw.cluster.as_ref().unwrap_or(&no_cluster);
    let (replicas, key_header) = cluster_replicas(&src, cluster)?;
    let (load, default_fanout) = reading.load(&mut external, &policy)?;
    let skew = match &cluster.clock_skew {
        Some(list) => skews(&src, list)?,
        None => Vec::new(),
    };
    let redis = redis::redis(&src, raw.redis.unwrap_or_default())?;
    let checks = checks::checks(&src, raw.checks.unwrap_or_default())?;
    let defaults = ArmDefaults {
        replicas,
        fanout: default_fanout,
        key_header: &key_header,
        skew: &skew,
        policy: &policy,
        raw_policy: &raw.policy,
        external: external.as_ref(),
        topology: redis.topology,
        spoofing: load.spoof.is_some(),
        load_key: &load.key,
        metrics: metrics.is_some(),
    };
    let arms = arms(&src, &raw.arms, &defaults)?;
    let faults = match &raw.faults {
        Some(list) => faults::faults(&src, list, duration, &arms, &redis)?,
        None => Vec::new(),
    };
    let distributed = match &raw.distributed {
        Some(d) => Some(distributed::distributed(&src, d, &load.shape)?),
        None => None,
    };
    Ok(Scenario {
        name,
        duration,
        seed,
        policy,
        load,
        redis,
        arms,
        faults,
        external,
        checks,
        distributed,
        metrics,
    })
}

/// The scenario's tables, read one section at a time against its text.
struct Reading<'a> {
    src: &'a Source<'a>,
    raw: &'a RawScenario,
}

impl Reading<'_> {
    /// `[target]` and its `metrics`; an external target takes no table
    /// that configures the reference API rlbench runs.
    fn target(&self) -> Result<(Option<ExternalTarget>, Option<MetricsSpec>)> {
        let (src, raw) = (self.src, self.raw);
        let external = match &raw.target {
            Some(t) => target::target(src, t)?,
            None => None,
        };
        let metrics = match raw
            .target
            .as_ref()
            .and_then(|t| t.get_ref().metrics.as_ref())
        {
            Some(m) => Some(metrics::metrics(
                src,
                m,
                external.is_none(),
                external.as_ref().is_some_and(|t| t.allow_remote),
            )?),
            None => None,
        };
        if external.is_some() {
            let own_stack = [
                raw.cluster.as_ref().map(|_| "[cluster]"),
                raw.redis.as_ref().map(|_| "[redis]"),
                raw.faults.as_ref().map(|_| "[[faults]]"),
            ];
            if let Some(table) = own_stack.into_iter().flatten().next() {
                let at = raw.target.as_ref().map(|t| t.span());
                return Err(src.error(
                    at,
                    format!(
                        "{table} configures the reference API rlbench runs; an external target \
                     takes its request settings in [target]"
                    ),
                ));
            }
        }
        Ok((external, metrics))
    }

    /// `[load]`: its schedule, keys and principals, and where each request
    /// carries its key; a bursts window is the scenario policy's.
    fn load(
        &self,
        external: &mut Option<ExternalTarget>,
        policy: &Policy,
    ) -> Result<(LoadSpec, Fanout)> {
        let (src, raw) = (self.src, self.raw);
        let (mut load, default_fanout) = load::load(src, &raw.load)?;
        if let Some((spoof, principals)) = spoof::spoof(src, &raw.load)? {
            load.spoof = Some(spoof);
            load.keys = principals;
        }
        self.load_key(&mut load, external)?;
        // Without a key the limiter sees every request as one key; so must
        // the verifier, or another key's admits would look like room.
        if external.as_ref().is_some_and(|t| {
            !t.template.sends_key() && load.key == crate::scenario::spec::KeySpec::InTemplate
        }) {
            if let Some(k) = raw
                .load
                .get_ref()
                .keys
                .as_ref()
                .filter(|k| *k.get_ref() > 1)
            {
                return Err(src.at(
                    k,
                    "an external target without key_header sends no key: every request is \
                     one key to the limiter, so give key_header or keys = 1",
                ));
            }
            load.keys = 1;
        }
        if let Shape::Bursts { window, .. } = &mut load.shape {
            *window = Duration::from_micros(crate::verify::window(policy).1.max(1) as u64);
        }
        Ok((load, default_fanout))
    }

    /// `[load] key`: put into the external target's request (beside its
    /// key header under spoofing), or read by the reference API.
    fn load_key(&self, load: &mut LoadSpec, external: &mut Option<ExternalTarget>) -> Result<()> {
        let (src, raw) = (self.src, self.raw);
        // Addresses (source_ip, X-Forwarded-For) for the most keys any
        // arm sends: an arm may send more than [load]'s (its own keys,
        // counted when the arm is read).
        let most_keys = raw
            .arms
            .get_ref()
            .iter()
            .filter_map(|a| a.get_ref().keys.as_ref())
            .map(|k| (*k.get_ref()).clamp(1, u32::MAX as i64) as u32)
            .fold(load.keys, u32::max);
        if let (Some(k), Some(t)) = (&raw.load.get_ref().key, &*external) {
            if matches!(
                t.template.key_place,
                crate::load::request::KeyPlace::Rls { .. }
            ) {
                return Err(src.at(
                    k,
                    "a rate-limit service gets the key as its descriptor's value ([target] \
                     descriptor); [load] key is for HTTP targets",
                ));
            }
        }
        if let Some(k) = &raw.load.get_ref().key {
            load.key = match external.as_mut() {
                // Under spoofing, a JWT goes beside the target's key header.
                Some(target) if load.spoof.is_some() => {
                    let mut beside = target.clone();
                    key::apply(src, k, &mut beside, false, most_keys)?
                }
                Some(target) => {
                    let given = raw
                        .target
                        .as_ref()
                        .is_some_and(|t| t.get_ref().key_header.is_some());
                    key::apply(src, k, target, given, most_keys)?
                }
                None => key::for_reference(src, k, most_keys)?,
            };
        }
        if load.spoof.is_some() {
            if let Some(k) = &raw.load.get_ref().key {
                spoof::load_key(src, k, &load.key)?;
            }
            if let (Some(t), Some(p)) = (&*external, &raw.load.get_ref().principals) {
                if t.template.key_header.is_none() && t.template.key_place == Default::default() {
                    return Err(src.at(
                        p,
                        "principals send a key (forged, or their own name) where the limiter may                      read it: give [target] key_header",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `[cluster] replicas` and `key_header`: what each arm of the reference
/// API takes unless it says otherwise.
fn cluster_replicas(src: &Source, cluster: &RawCluster) -> Result<(usize, String)> {
    let replicas = match &cluster.replicas {
        Some(r) => src.count(r, "replicas", 1, MAX_REPLICAS)? as usize,
        None => 1,
    };
    let key_header = match &cluster.key_header {
        Some(h) => {
            let ok = axum::http::HeaderName::try_from(h.get_ref().as_str()).is_ok();
            if !ok {
                return Err(src.at(h, format!("{:?} is not a valid header name", h.get_ref())));
            }
            h.get_ref().clone()
        }
        None => DEFAULT_KEY_HEADER.to_string(),
    };
    Ok((replicas, key_header))
}

/// `[[arms]]`: at least one, each named once.
fn arms(
    src: &Source,
    raw: &Spanned<Vec<Spanned<super::raw::RawArm>>>,
    defaults: &ArmDefaults,
) -> Result<Vec<Arm>> {
    if raw.get_ref().is_empty() {
        return Err(src.at(raw, "a scenario needs at least one [[arms]]"));
    }
    let mut seen = HashSet::new();
    let mut arms = Vec::new();
    for arm_raw in raw.get_ref() {
        let arm = arm::read_arm(src, arm_raw.get_ref(), defaults)?;
        if !seen.insert(arm.name.clone()) {
            return Err(src.at(
                &arm_raw.get_ref().name,
                format!("arm {:?} is defined twice", arm.name),
            ));
        }
        arms.push(arm);
    }
    Ok(arms)
}

mod arm;
mod checks;
mod distributed;
pub(super) use distributed::{coordinator, CoordinatorError};
mod expect;
mod faults;
mod hints;
mod key;
mod load;
mod metrics;
mod params;
mod policy;
mod presets;
mod redis;
mod source;
mod spoof;
mod target;
#[cfg(test)]
mod tests;
