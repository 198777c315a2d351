//! What the case generator draws from: the simulated algorithms, the
//! kinds of case, and where a decision is placed in its interval.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    LogMemory,
    LogZset,
    FixedEpoch,
    FixedKeyed,
    FixedAnchored,
    SegEpoch,
    /// Redis keys per segment / per window, no clamping.
    SegKeyed,
    CounterLt,
    CounterLe,
    CounterKeyed,
    /// f64 arithmetic on f64 seconds.
    CounterFloat,
    Bucket,
    BucketFloat,
    Gcra,
    /// ASP.NET limiters replenished from a heartbeat (late, drifting).
    AspFixed,
    AspSeg,
    AspBucket,
    /// ASP.NET token bucket on an exact timer: chunked, never late.
    ChunkedTimer,
    /// Chunks on the epoch's whole periods (Stripe's Redis bucket).
    ChunkEpoch,
    /// Chunks counted from the first hit (bucket4j's intervally).
    ChunkFirstHit,
    /// Counting every attempt, denied ones too (`count_rejected`): a log,
    /// keys per segment, HAProxy's weighted counter.
    LogAttempts,
    SegAttempts,
    CounterAttempts,
    /// Released ASP.NET token bucket: continuous fill on heartbeat ticks,
    /// banking while full (judged with `banked_tokens`).
    AspReleased,
}

impl Algo {
    pub(crate) fn counts_attempts(self) -> bool {
        matches!(
            self,
            Algo::LogAttempts | Algo::SegAttempts | Algo::CounterAttempts
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A fresh limiter; errors decided inside their interval or never.
    Plain,
    /// Requests before trace time 0 left state behind (`unknown_history`).
    History,
    /// Timeouts: the server decides after the client gave up, or never.
    Timeouts,
    /// History and timeouts together.
    Both,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] = [Kind::Plain, Kind::History, Kind::Timeouts, Kind::Both];

    pub(crate) fn history(self) -> bool {
        matches!(self, Kind::History | Kind::Both)
    }

    pub(crate) fn timeouts(self) -> bool {
        matches!(self, Kind::Timeouts | Kind::Both)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    Early,
    Late,
    Uniform,
    Mixed,
    AdmitsLate,
    RejectsLate,
}

impl Strategy {
    pub(crate) const ALL: [Strategy; 6] = [
        Strategy::Early,
        Strategy::Late,
        Strategy::Uniform,
        Strategy::Mixed,
        Strategy::AdmitsLate,
        Strategy::RejectsLate,
    ];

    pub(crate) fn plan(self, rng: &mut SmallRng, sent: i64, done: i64) -> Plan {
        match self {
            Strategy::Early => Plan::At(sent),
            Strategy::Late => Plan::At(done),
            Strategy::Uniform => Plan::At(rng.random_range(sent..=done)),
            Strategy::Mixed => {
                let s =
                    [Strategy::Early, Strategy::Late, Strategy::Uniform][rng.random_range(0..3)];
                s.plan(rng, sent, done)
            }
            Strategy::AdmitsLate => Plan::Probe { admits_late: true },
            Strategy::RejectsLate => Plan::Probe { admits_late: false },
        }
    }
}
