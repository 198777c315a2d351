//! The charts a run folder holds, by file and title, and one arm's figures
//! as they need them.

use hdrhistogram::Histogram;

/// One arm as the charts need it.
pub(crate) struct ArmData<'a> {
    pub name: &'a str,
    /// The busiest key's admits in a trailing window over the limit:
    /// (seconds, ratio).
    pub timeline: Vec<(f64, f64)>,
    /// The most a correct limiter may admit in that window, over the limit.
    pub band: Option<f64>,
    /// Each fault's window (seconds from the load's start), to shade.
    pub fault_windows: Vec<(f64, f64)>,
    /// Latency from the intended send time (µs).
    pub latency: &'a Histogram<u64>,
    /// Each replica's (admitted, rejected).
    pub per_replica: Vec<(u64, u64)>,
    pub over_admission: Option<f64>,
}

/// A chart written into the run folder.
pub(crate) struct Chart {
    pub file: &'static str,
    pub title: &'static str,
}

pub(crate) const CHARTS: [Chart; 4] = [
    Chart {
        file: "admitted-vs-limit.png",
        title: "Admitted vs limit over time",
    },
    Chart {
        file: "latency-spectrum.png",
        title: "Latency by percentile",
    },
    Chart {
        file: "per-replica.png",
        title: "Admitted and rejected per replica",
    },
    Chart {
        file: "over-admission.png",
        title: "Over-admission by arm",
    },
];
