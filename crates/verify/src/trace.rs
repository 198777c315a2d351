//! What the verifier reads and what it says: a key's observed requests
//! ([`Obs`], each with the window its decision happened in), the
//! [`Options`] that state what rlbench knows of the limiter's clocks and
//! history, and the [`Verdict`].

/// What a request's response says about the limiter's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    Admitted,
    Rejected,
    /// No usable answer (error, timeout): it may have been admitted.
    Unknown,
}

/// One request of one key, times in µs on the generator's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obs {
    pub sent: i64,
    pub done: i64,
    pub decided: Decided,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Timing tolerance in the limiter's favour: how far the distance
    /// between two of its clock readings may be from the distance between
    /// the instants they were taken at — the clock's resolution plus how
    /// far apart the deciders' clocks may be ([`Options::slack_for`]).
    /// Only ever makes a verdict milder.
    pub slack_us: i64,
    /// Wall-clock µs at trace time 0, to replay epoch-aligned windows.
    pub epoch_offset_us: i64,
    /// How far `epoch_offset_us` may be off: widens the grid rules' slack.
    pub epoch_uncertainty_us: i64,
    /// Every decision read this machine's wall clock, so epoch-aligned
    /// windows are known in trace time and the sharper grid rules apply.
    pub aligned: bool,
    /// The limiter may hold state from before the trace (a target rlbench
    /// did not start): a window's rejects sent within its memory of the
    /// start are never counted false, and a bucket may start empty.
    pub unknown_history: bool,
    /// With an unknown history: how long after the trace's start requests
    /// sent before it (an earlier run's stragglers) may still be decided.
    /// Rejects are judged only once those are decided and, for a window,
    /// forgotten; a bucket is taken as empty at that moment.
    pub history_settles_us: i64,
    /// How late a window, a segment or a chunked refill may run (a
    /// heartbeat that replenishes only on its ticks); never early.
    pub lateness_us: i64,
    /// The token bucket adds `refill.count` tokens in one chunk per
    /// `refill.per_us` (ASP.NET's TokenBucketRateLimiter), not continuously.
    pub chunked_refill: bool,
    /// Those chunks land on the limiter's wall clock's multiples of
    /// `refill.per_us` (a bucket counting whole seconds): with `aligned`,
    /// the chunks' boundaries are known in trace time.
    pub chunks_on_epoch: bool,
    /// How long after the client gave up (`done`) the server may still
    /// decide an error or a timeout; `None`: at any time.
    pub max_server_time_us: Option<i64>,
    /// Every decision reads one clock inside its atomic step (one process
    /// that reads the time under its lock, Redis' TIME inside the script),
    /// so decisions reach the state in the order of their readings. Off,
    /// deciders may read clocks of their own (within the slack of each
    /// other) before they reach the state: the segmented-window and
    /// sliding-counter rules that rely on that order are weakened.
    pub one_clock: bool,
    /// How fast or slow (parts per million) the limiter's clocks may run
    /// against the trace's: every window, segment and refill is taken that
    /// much shorter (for violations) or longer (for false rejects), and an
    /// epoch-aligned grid drifts that much from its mapping at time 0.
    pub clock_rate_ppm: i64,
    /// Rejected attempts count against the limit as admits do (HAProxy's
    /// stick tables): each admit needs fewer than the limit of attempts
    /// counted before it, and a reject is false only when the attempts
    /// (not just the admits) left room.
    pub count_rejected: bool,
    /// A token bucket may bank up to this many tokens while full and hand
    /// them over at once at its next refill after it empties (released
    /// ASP.NET Core's partitioned `TokenBucketRateLimiter`: up to its
    /// capacity). The violation rules and `U` allow that many more; false
    /// rejects are judged as before (banking only ever adds tokens).
    pub banked_tokens: u64,
}

/// The least slack: a millisecond clock (the verifier's default).
pub const MIN_SLACK_US: i64 = 1_000;

/// No clock is judged coarser, or further apart, than a day.
const MOST_SLACK_US: i64 = 86_400_000_000;

impl Options {
    /// The slack for a limiter whose clock reads in steps of
    /// `resolution_us` and whose deciders' clocks may be up to `skew_us`
    /// apart: their **sum**, floored at [`MIN_SLACK_US`]. Two readings `a`
    /// (decider 1) and `b` (decider 2) of instants `s ≤ t` satisfy
    /// `b − a ≤ (t − s) + skew + resolution`: each reading truncates by
    /// less than a step (one by almost nothing, the other by almost a
    /// step), and the two clocks add their offset on top. The larger of
    /// the two alone leaves the other out — a millisecond `Date.now()` on
    /// two servers 0.9 ms apart puts two readings up to 1.9 ms closer (or
    /// further) than the instants. Values outside 0..=a day are clamped.
    pub fn slack_for(resolution_us: i64, skew_us: i64) -> i64 {
        let r = resolution_us.clamp(0, MOST_SLACK_US);
        let s = skew_us.clamp(0, MOST_SLACK_US);
        (r + s).max(MIN_SLACK_US)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            slack_us: MIN_SLACK_US,
            epoch_offset_us: 0,
            epoch_uncertainty_us: 0,
            aligned: false,
            unknown_history: false,
            history_settles_us: 0,
            lateness_us: 0,
            chunked_refill: false,
            chunks_on_epoch: false,
            max_server_time_us: None,
            one_clock: false,
            clock_rate_ppm: 0,
            count_rejected: false,
            banked_tokens: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Verdict {
    pub admitted: u64,
    pub rejected: u64,
    pub unknown: u64,
    /// The over-admission bound U: the most admits any correct limiter
    /// could have given these decided requests (see `verify::admit_bound`).
    pub allowed_max: u64,
    /// An ideal limiter's admits, replayed over the send times: a
    /// yardstick only (correct limiters pass it), never gated on.
    pub replay_admits: u64,
    pub definite_violations: u64,
    pub possible_violations: u64,
    pub false_rejects: u64,
    /// Max over keys and windows of admitted-in-window / limit.
    pub peak_window_ratio: f64,
    /// Admits answered too slowly for the policy's sharp rules
    /// ([`crate::too_slow`]): little or nothing can be proven of them.
    /// (Files written before it was counted lack it: 0.)
    #[cfg_attr(feature = "serde", serde(default))]
    pub slow_admits: u64,
}

impl Verdict {
    pub fn over_admission_ratio(&self) -> Option<f64> {
        match (self.admitted, self.allowed_max) {
            (0, _) => Some(0.0),
            (_, 0) => None,
            (a, m) => Some(a as f64 / m as f64),
        }
    }

    /// admitted / the ideal replay: informative, not a bound.
    pub fn replay_ratio(&self) -> Option<f64> {
        match (self.admitted, self.replay_admits) {
            (0, _) => Some(0.0),
            (_, 0) => None,
            (a, m) => Some(a as f64 / m as f64),
        }
    }

    /// Share of the rejects that were certainly wrong.
    pub fn false_reject_ratio(&self) -> f64 {
        if self.rejected == 0 {
            0.0
        } else {
            self.false_rejects as f64 / self.rejected as f64
        }
    }

    pub fn merge(&mut self, other: &Verdict) {
        self.admitted += other.admitted;
        self.rejected += other.rejected;
        self.unknown += other.unknown;
        self.allowed_max += other.allowed_max;
        self.replay_admits += other.replay_admits;
        self.definite_violations += other.definite_violations;
        self.possible_violations += other.possible_violations;
        self.false_rejects += other.false_rejects;
        self.slow_admits += other.slow_admits;
        self.peak_window_ratio = self.peak_window_ratio.max(other.peak_window_ratio);
    }
}

/// One stretch of a run (e.g. while a fault lasted), judged soundly.
/// `definite_violations`: how many the admits sent in it add to those of
/// everything sent before it (the fewest admits to drop can only grow as
/// admits are added, so the phases of a run add up to its total, and a
/// correct limiter scores 0 in each). `false_rejects`: its rejects, judged
/// against every admit of the key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseVerdict {
    pub definite_violations: u64,
    pub false_rejects: u64,
}
