//! The lanes' pacing and growth figures: how long the pacer waits at most,
//! when a lane opens another connection, how far ahead it looks.

use std::time::Duration;

/// Longest single wait of the pacer: how quickly it sees a stop.
pub(crate) const TICK: Duration = Duration::from_millis(5);

/// The pacer wakes at most once per grain: requests closer together than
/// that leave together, each at most a grain late (its lag, counted in its
/// latency). A wake per request — a timer armed, an `epoll_wait` slept and
/// woken — cost a lane twice the CPU at 30,000 requests/s on two cores,
/// and a lane short of CPU is late by tens of milliseconds instead
/// (BENCHMARKS.md, "The open loop's tail": 250 µs, 500 µs and 1 ms were
/// tried in alternating rounds; 500 µs had the lowest p99 at 30k and 40k
/// for a p50 still a third of oha's). Slower schedules, whose requests are
/// further apart than this, are not touched.
pub(crate) const GRAIN: Duration = Duration::from_micros(500);

/// Connections per target a lane opens as soon as requests queue.
pub(crate) const FLOOR: usize = 16;

/// Past the floor a target's connections grow to at most this many times
/// the requests its lane has in flight at once — its coming rate times its
/// service time (Little's law) — above the floor: room for a stall's
/// backlog to drain, and no more. A lane short of CPU drains no faster
/// with more, and a burst of new connections can overflow the target's
/// listen queue (a dropped SYN costs its request a second).
pub(crate) const HEADROOM: f64 = 4.0;

/// Up to this many connections per target a lane grows (within the cap)
/// even when answers have slowed: on a machine whose cores the target
/// shares, every round trip slows under load, and without them a target
/// that could answer 50,000 requests/s got 32 connections' worth. Past
/// it, only while answers take what they always did: a saturated target
/// only queues more behind more connections.
pub(crate) const FREE_UP_TO: usize = 64;

/// A connection idle this long is closed, down to the floor.
pub(crate) const IDLE: Duration = Duration::from_secs(1);

/// Past the floor: how long the oldest queued request must have waited,
/// and how long since the last connection was added, before another.
pub(crate) const GROW_AFTER: Duration = Duration::from_millis(1);

/// Before a wait at least this long the pacer sends what its lane gathered
/// (so slow schedules still show progress).
pub(crate) const FLUSH_BEFORE_WAIT: Duration = Duration::from_millis(2);

/// How far ahead the scout looks: a lane holds a connection open, per
/// target, for each of its requests due this soon (up to [`MAX_READY`]).
pub(crate) const LOOKAHEAD: Duration = Duration::from_millis(50);

/// Connections per target a lane opens ahead of what is due.
pub(crate) const MAX_READY: usize = 256;
