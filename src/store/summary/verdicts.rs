//! summary.json's verdicts: correctness against the policy, the
//! witnesses that prove it, the expectations and the gate, the lease
//! bound, the clock rates allowed for, and the policy that would fit.

use serde::{Deserialize, Serialize};

/// See [`ArmSummary::policy_fit`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PolicyFit {
    /// In words, e.g. `sliding_log: 30 per 2s`.
    pub policy_text: String,
    /// As `--policy` takes it.
    pub inline: String,
    /// Its long-run rate over the declared policy's.
    pub rate_ratio: f64,
    /// The keys and requests it was judged on.
    pub keys: u64,
    pub requests: u64,
}

/// The clock rates behind an arm's verdicts (parts per million).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClockRate {
    /// The wall clock against the generator's monotonic clock, the worst
    /// stretch between samples a second apart (reading error included);
    /// null with too few samples.
    pub measured_ppm: Option<i64>,
    /// Samples taken (start, every second, end).
    pub samples: usize,
    /// The replicas' clocks were made to run this much fast (simulated).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub simulated_ppm: i64,
    /// Declared in `[checks] clock_rate_ppm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_ppm: Option<i64>,
    /// What every window, segment and refill was widened by.
    pub allowed_ppm: i64,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// A batched arm judged twice: against its policy (the usual verdict:
/// leases over-admit) and against the bound leases allow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LeaseBound {
    /// Admits any window may hold: the limit plus one lease's rest per
    /// replica, at most the limit.
    pub limit_per_window: u64,
    /// Admits proven beyond that bound (0 for a correct lease limiter).
    pub definite_violations: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Correctness {
    /// The over-admission bound U: the most admits any correct limiter
    /// could have given the decided requests (summed over keys).
    pub allowed_max: u64,
    /// admitted / allowed_max; above 1 only with definite violations; null
    /// when admits happened where none were allowed.
    pub over_admission_ratio: Option<f64>,
    /// An ideal limiter replayed over the send times: a yardstick only
    /// (a correct limiter deciding later may pass it), never a gate.
    #[serde(default)]
    pub replay_admits: u64,
    pub peak_window_ratio: f64,
    pub definite_violations: u64,
    pub possible_violations: u64,
    pub false_rejects: u64,
    pub false_reject_ratio: f64,
    /// Admits answered too slowly for the policy's sharp rules, when any
    /// were: little or nothing can be proven of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_slow: Option<TooSlow>,
    /// The proof of the verdicts: per kind the earliest and the largest
    /// violations and false rejects, requests referenced by `seq`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<ArmWitness>,
}

/// See [`Correctness::too_slow`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TooSlow {
    /// How many admits were that slow.
    pub admits: u64,
    /// From which answer time (ms, the verifier's slack included).
    pub from_ms: f64,
    /// What can still be proven of them, in words.
    pub left: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Expect {
    /// The key as written in `[arms.expect]`.
    pub expectation: String,
    pub figure: String,
    /// "max" or "min".
    pub kind: String,
    pub bound: f64,
    pub value: Option<f64>,
    pub passed: bool,
    /// In words, e.g. `over_admission_ratio 2.97 > max 1.01`.
    pub detail: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Gate {
    pub passed: bool,
    pub failures: Vec<String>,
}

/// What a witness proves; summary.json spells it `violation` or
/// `false_reject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WitnessKind {
    /// Admits beyond what the policy allows.
    Violation,
    /// A reject the policy had room for.
    FalseReject,
}

impl From<crate::verify::Kind> for WitnessKind {
    fn from(kind: crate::verify::Kind) -> Self {
        match kind {
            crate::verify::Kind::Violation => WitnessKind::Violation,
            crate::verify::Kind::FalseReject => WitnessKind::FalseReject,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmWitness {
    pub kind: WitnessKind,
    pub key: String,
    /// The rule in words, e.g. `customer-0003: 11 admits, all decided …`.
    pub rule: String,
    /// The span the rule speaks of (s, trace time).
    pub from_s: f64,
    pub to_s: f64,
    /// Admits beyond what the span allows, or a false reject's spare capacity.
    pub excess: u64,
    /// The false reject itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject: Option<WitnessRequest>,
    /// The admits that prove it (for a false reject: those that may have
    /// counted against it), by send time; at most 64.
    pub requests: Vec<WitnessRequest>,
    /// How many more the proof holds than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_requests: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct WitnessRequest {
    pub seq: u64,
    pub replica: u32,
    pub sent_s: f64,
    pub done_s: f64,
    /// `admitted`, `rejected` or `unknown` (an error or a timeout).
    pub outcome: String,
}
