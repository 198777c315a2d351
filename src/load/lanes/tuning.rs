//! The lanes' pacing and growth figures: how long the pacer waits at most,
//! when a lane opens another connection, how far ahead it looks.

use std::time::Duration;

/// Longest single wait of the pacer: how quickly it sees a stop.
pub(crate) const TICK: Duration = Duration::from_millis(5);

/// Connections per target a lane opens as soon as requests queue.
pub(crate) const FLOOR: usize = 16;

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
