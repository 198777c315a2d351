//! The limiter's own metrics (`[target] metrics`): its counters read
//! before, during and after each arm's load — scraped or through a
//! Prometheus server — and what they rose by held against what its
//! clients saw. `selector` and `exposition` read the texts, `read` fetches,
//! `held` compares, `error` says what went wrong.

pub(crate) mod error;
pub(crate) mod exposition;
pub(crate) mod held;
pub(crate) mod read;
pub(crate) mod selector;

/// `[target] metrics`: where the limiter's own counters are read, and
/// which series count its admits and its rejects (at least one).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MetricsSpec {
    pub source: MetricsSource,
    pub admitted: Option<selector::Selector>,
    pub rejected: Option<selector::Selector>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MetricsSource {
    /// Each replica rlbench starts, at its `/metrics`.
    Replicas,
    /// These exposition URLs, each scraped and their series added.
    Scrape(Vec<hyper::Uri>),
    /// A Prometheus server that scrapes the limiter: its base URL.
    Prometheus(hyper::Uri),
}
