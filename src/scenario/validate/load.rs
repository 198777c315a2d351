//! The `[load]` table: the schedule (or closed loop), keys and their
//! distribution, fan-out, timeouts, retrying callers.

use super::source::{Result, Source, MAX_RATE};
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::retry::{Backoff, Retry};
use crate::load::schedule::{Shape, Stage};
use crate::scenario::raw::{RawLoad, RawRetry};
use crate::scenario::spec::LoadSpec;
use crate::scenario::units;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// The most retries a caller makes after a first attempt.
pub(super) const MAX_RETRIES: i64 = 10;

pub(super) fn fanout(src: &Source, value: &Spanned<String>) -> Result<Fanout> {
    let name = value.get_ref();
    Fanout::from_name(name).ok_or_else(|| {
        src.at(
            value,
            format!("unknown fanout {name:?}, expected {}", Fanout::NAMES),
        )
    })
}

pub(super) fn rate_value(
    src: &Source,
    v: &Spanned<f64>,
    what: &str,
    min_exclusive: bool,
) -> Result<f64> {
    let r = *v.get_ref();
    let low_ok = if min_exclusive { r > 0.0 } else { r >= 0.0 };
    if !(low_ok && r <= MAX_RATE) {
        let low = if min_exclusive {
            "above 0"
        } else {
            "at least 0"
        };
        return Err(src.at(
            v,
            format!("{what} must be {low} and at most {MAX_RATE} requests/s, got {r}"),
        ));
    }
    Ok(r)
}

/// The schedule's shape; a Bursts window is filled in per arm (its policy's).
fn shape(src: &Source, spanned: &Spanned<RawLoad>) -> Result<Shape> {
    let l = spanned.get_ref();
    let reading = ShapeReading {
        src,
        spanned,
        l,
        kind: l
            .schedule
            .as_ref()
            .map_or("constant", |k| k.get_ref().as_str()),
    };
    reading.only_its_own_keys()?;
    // One schedule a line, those with keys of their own read by functions.
    Ok(match reading.kind {
        "constant" => Shape::Constant {
            rate: reading.need_rate()?,
        },
        "poisson" => Shape::Poisson {
            rate: reading.need_rate()?,
        },
        "stages" => reading.stages()?,
        "bursts" => reading.bursts()?,
        "closed" => reading.closed()?,
        other => {
            let at = l.schedule.as_ref().map(|v| v.span());
            return Err(src.error(
                at,
                format!("unknown schedule {other:?}, expected constant, poisson, stages, bursts or closed"),
            ));
        }
    })
}

/// `[load]`'s schedule keys, read against the schedule they belong to.
struct ShapeReading<'a> {
    src: &'a Source<'a>,
    spanned: &'a Spanned<RawLoad>,
    l: &'a RawLoad,
    /// `schedule`, "constant" when not given.
    kind: &'a str,
}

impl ShapeReading<'_> {
    /// `rate`, which an open loop of one rate needs.
    fn need_rate(&self) -> Result<f64> {
        let (src, kind) = (self.src, self.kind);
        let r = self.l.rate.as_ref().ok_or_else(|| {
            src.error(
                Some(self.spanned.span()),
                format!("[load] needs \"rate\" (requests/s) for the {kind} schedule"),
            )
        })?;
        rate_value(src, r, "rate", true)
    }

    /// `key` given to a schedule it does not apply to.
    fn not_here(&self, present: bool, key: &str, span: Option<Range<usize>>) -> Result<()> {
        if present {
            return Err(self.src.error(
                span,
                format!("{key:?} does not apply to the {} schedule", self.kind),
            ));
        }
        Ok(())
    }

    /// The keys of the stages, closed and bursts schedules, on any other.
    fn only_its_own_keys(&self) -> Result<()> {
        let (l, kind) = (self.l, self.kind);
        if kind != "stages" {
            self.not_here(
                l.stages.is_some(),
                "stages",
                l.stages.as_ref().map(|v| v.span()),
            )?;
        }
        if kind != "closed" {
            self.not_here(
                l.concurrency.is_some(),
                "concurrency",
                l.concurrency.as_ref().map(|v| v.span()),
            )?;
            self.not_here(
                l.think_time.is_some(),
                "think_time",
                l.think_time.as_ref().map(|v| v.span()),
            )?;
        }
        if kind != "bursts" {
            self.not_here(
                l.burst.is_some(),
                "burst",
                l.burst.as_ref().map(|v| v.span()),
            )?;
            self.not_here(
                l.burst_spread.is_some(),
                "burst_spread",
                l.burst_spread.as_ref().map(|v| v.span()),
            )?;
        }
        Ok(())
    }

    /// `schedule = "stages"`: from `rate` (default 0) through each stage's
    /// target over its duration.
    fn stages(&self) -> Result<Shape> {
        let (src, l) = (self.src, self.l);
        let from = match &l.rate {
            Some(r) => rate_value(src, r, "rate", false)?,
            None => 0.0,
        };
        let list = l.stages.as_ref().ok_or_else(|| {
            src.error(
                Some(self.spanned.span()),
                "the stages schedule needs [[load.stages]] with target and duration",
            )
        })?;
        if list.get_ref().is_empty() {
            return Err(src.at(list, "the stages schedule needs at least one stage"));
        }
        let stages = list
            .get_ref()
            .iter()
            .map(|st| {
                let st = st.get_ref();
                Ok(Stage {
                    target: rate_value(src, &st.target, "target", false)?,
                    over: src.duration(&st.duration)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Shape::Stages { from, stages })
    }

    /// `schedule = "bursts"`: `burst` requests around each window edge,
    /// spread over `burst_spread`.
    fn bursts(&self) -> Result<Shape> {
        let (src, l) = (self.src, self.l);
        self.not_here(l.rate.is_some(), "rate", l.rate.as_ref().map(|v| v.span()))?;
        let per_edge = match &l.burst {
            Some(b) => src.count(b, "burst", 1, 1_000_000)? as u32,
            None => {
                return Err(src.error(
                    Some(self.spanned.span()),
                    "the bursts schedule needs \"burst\" (requests per window edge)",
                ))
            }
        };
        let spread = match &l.burst_spread {
            Some(d) => src.duration(d)?,
            None => Duration::from_millis(20),
        };
        Ok(Shape::Bursts {
            per_edge,
            spread,
            window: Duration::ZERO,
        })
    }

    /// `schedule = "closed"`: `concurrency` workers, each waiting
    /// `think_time` between answer and request.
    fn closed(&self) -> Result<Shape> {
        let (src, l) = (self.src, self.l);
        self.not_here(l.rate.is_some(), "rate", l.rate.as_ref().map(|v| v.span()))?;
        let concurrency = match &l.concurrency {
            Some(c) => src.count(c, "concurrency", 1, 100_000)? as u32,
            None => {
                return Err(src.error(
                    Some(self.spanned.span()),
                    "the closed schedule needs \"concurrency\" (workers)",
                ))
            }
        };
        let think = match &l.think_time {
            Some(t) => {
                let us = units::signed_micros(t.get_ref()).map_err(|e| src.at(t, e.to_string()))?;
                if us < 0 {
                    return Err(src.at(t, "think_time must not be negative"));
                }
                Duration::from_micros(us as u64)
            }
            None => Duration::ZERO,
        };
        Ok(Shape::Closed { concurrency, think })
    }
}

fn key_distribution(src: &Source, l: &RawLoad) -> Result<KeyDistribution> {
    distribution(
        src,
        &Distribution {
            key_distribution: &l.key_distribution,
            zipf_s: &l.zipf_s,
            hot_share: &l.hot_share,
            sweep_block: &l.sweep_block,
        },
    )
}

/// `key_distribution` and its parameters, as `[load]` or an arm gives
/// them.
pub(super) struct Distribution<'a> {
    pub key_distribution: &'a Option<Spanned<String>>,
    pub zipf_s: &'a Option<Spanned<f64>>,
    pub hot_share: &'a Option<Spanned<f64>>,
    pub sweep_block: &'a Option<Spanned<i64>>,
}

/// A key distribution read: uniform (the default), zipf (`zipf_s`), hot
/// (`hot_share`) or sweep (`sweep_block`), each refusing another's
/// parameter.
pub(super) fn distribution(src: &Source, l: &Distribution) -> Result<KeyDistribution> {
    let kind = l
        .key_distribution
        .as_ref()
        .map_or("uniform", |k| k.get_ref().as_str());
    if kind != "sweep" {
        if let Some(b) = l.sweep_block {
            return Err(src.at(
                b,
                format!("\"sweep_block\" does not apply to key_distribution = {kind:?}"),
            ));
        }
    }
    let stray = |present: &Option<Spanned<f64>>, key: &str| -> Result<()> {
        match present {
            Some(v) => Err(src.at(
                v,
                format!("{key:?} does not apply to key_distribution = {kind:?}"),
            )),
            None => Ok(()),
        }
    };
    Ok(match kind {
        "uniform" => {
            stray(l.zipf_s, "zipf_s")?;
            stray(l.hot_share, "hot_share")?;
            KeyDistribution::Uniform
        }
        "zipf" => {
            stray(l.hot_share, "hot_share")?;
            let s = match l.zipf_s {
                Some(v) if *v.get_ref() > 0.0 && *v.get_ref() <= 10.0 => *v.get_ref(),
                Some(v) => {
                    return Err(src.at(
                        v,
                        format!("zipf_s must be above 0 and at most 10, got {}", v.get_ref()),
                    ))
                }
                None => 1.0,
            };
            KeyDistribution::Zipf { s }
        }
        "hot" => {
            stray(l.zipf_s, "zipf_s")?;
            let share = match l.hot_share {
                Some(v) if (0.0..=1.0).contains(v.get_ref()) => *v.get_ref(),
                Some(v) => {
                    return Err(src.at(
                        v,
                        format!("hot_share must be between 0 and 1, got {}", v.get_ref()),
                    ))
                }
                None => 0.5,
            };
            KeyDistribution::Hot { share }
        }
        "sweep" => {
            stray(l.zipf_s, "zipf_s")?;
            stray(l.hot_share, "hot_share")?;
            let block = match l.sweep_block {
                Some(b) => src.count(b, "sweep_block", 1, 1_000_000)? as u32,
                None => 1,
            };
            KeyDistribution::Sweep { block }
        }
        other => {
            let at = l.key_distribution.as_ref().map(|v| v.span());
            return Err(src.error(
                at,
                format!("unknown key_distribution {other:?}, expected uniform, zipf, hot or sweep"),
            ));
        }
    })
}

pub(super) fn load(src: &Source, spanned: &Spanned<RawLoad>) -> Result<(LoadSpec, Fanout)> {
    let l = spanned.get_ref();
    let shape = shape(src, spanned)?;
    let keys = match &l.keys {
        Some(k) => src.count(k, "keys", 1, 10_000_000)? as u32,
        None => 10,
    };
    let timeout = match &l.timeout {
        Some(t) => src.duration(t)?,
        None => Duration::from_secs(2),
    };
    let max_in_flight = match &l.max_in_flight {
        Some(m) => src.count(m, "max_in_flight", 1, 1_000_000)? as usize,
        None => 10_000,
    };
    let fanout = match &l.fanout {
        Some(f) => fanout(src, f)?,
        None => Fanout::RoundRobin,
    };
    Ok((
        LoadSpec {
            shape,
            keys,
            key_distribution: key_distribution(src, l)?,
            timeout,
            max_in_flight,
            retry: l.retry.as_ref().map(|r| retry(src, r)).transpose()?,
            key: Default::default(),
            spoof: None,
        },
        fanout,
    ))
}

/// `retry = { on = [429], respect_retry_after = true, backoff =
/// "exponential", base = "100ms", cap = "5s", max = 3 }`, every key optional.
fn retry(src: &Source, spanned: &Spanned<RawRetry>) -> Result<Retry> {
    let r = spanned.get_ref();
    let mut out = Retry::default();
    if let Some(list) = &r.on {
        if list.get_ref().is_empty() {
            return Err(src.at(list, "retry.on needs at least one status"));
        }
        out.on = list
            .get_ref()
            .iter()
            .map(|c| {
                src.count(
                    c,
                    "a retried status (2xx means admitted)",
                    *crate::target::LIMITED_STATUSES.start() as i64,
                    *crate::target::LIMITED_STATUSES.end() as i64,
                )
                .map(|c| c as u16)
            })
            .collect::<Result<Vec<u16>>>()?;
    }
    if let Some(respect) = r.respect_retry_after {
        out.respect_retry_after = respect;
    }
    if let Some(b) = &r.backoff {
        out.backoff = Backoff::from_name(b.get_ref()).ok_or_else(|| {
            src.at(
                b,
                format!(
                    "unknown retry backoff {:?}, expected {}",
                    b.get_ref(),
                    Backoff::NAMES
                ),
            )
        })?;
    }
    if let Some(b) = &r.base {
        out.base = src.duration(b)?;
    }
    if let Some(c) = &r.cap {
        out.cap = src.duration(c)?;
        if out.cap < out.base {
            return Err(src.at(c, "retry.cap must not be shorter than retry.base"));
        }
    }
    if let Some(m) = &r.max {
        out.max = src.count(m, "retry.max", 1, MAX_RETRIES)? as u32;
    }
    Ok(out)
}
