//! What an arm takes from the scenario unless it says otherwise, and its
//! policy: its own, or the scenario's.

use crate::load::pick::Fanout;
use crate::scenario::raw::{RawArm, RawPolicy};
use crate::scenario::spec::PolicyTiming;
use crate::scenario::validate::policy;
use crate::scenario::validate::source::{Result, Source};
use reference_api::Policy;
use toml::Spanned;

/// What an arm takes from the scenario unless it says otherwise.
pub(crate) struct ArmDefaults<'a> {
    pub(crate) replicas: usize,
    pub(crate) fanout: Fanout,
    pub(crate) key_header: &'a str,
    pub(crate) skew: &'a [i64],
    pub(crate) policy: &'a Policy,
    pub(crate) raw_policy: &'a Spanned<RawPolicy>,
    pub(crate) external: Option<&'a crate::scenario::spec::ExternalTarget>,
    pub(crate) topology: reference_api::config::Topology,
    /// `[load] principals` spoof their identities.
    pub(crate) spoofing: bool,
    pub(crate) load_key: &'a crate::scenario::spec::KeySpec,
    /// `[target] metrics` is given.
    pub(crate) metrics: bool,
}

/// The arm's policy (its own, or the scenario's) and the preset it was stated as.
pub(super) fn arm_policy(
    src: &Source,
    a: &RawArm,
    defaults: &ArmDefaults,
) -> Result<(Policy, Option<String>, PolicyTiming)> {
    match &a.policy {
        Some(p) => policy::arm_policy(src, defaults.raw_policy, p),
        None => Ok((
            defaults.policy.clone(),
            policy::preset_label(defaults.raw_policy.get_ref()),
            policy::timing(src, defaults.raw_policy.get_ref())?,
        )),
    }
}
