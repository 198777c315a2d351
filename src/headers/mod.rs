//! The limiter's rate-limit headers put to the test: `checks` holds what
//! the answers advertised (parsed into the trace by `events::advertised`)
//! against the admits and the policy; `probe` waits out a Retry-After and
//! asks again.

pub(crate) mod checks;
pub(crate) mod probe;
