//! The atomic path: one script from `lua/` per decision, run by EVALSHA
//! (with `wait_replicas`, followed by WAIT in the same pipeline). On
//! NOSCRIPT the script is loaded and the call made once more (the script
//! did not run, so the retry cannot double-count); nothing else is ever
//! retried.
//! The scripts come from `build.rs`, which prepends `lua/prelude.lua` (it
//! reads the clock into `now`) to each and puts in the shared chunks of
//! `lua/shared/` where a script includes one; this file embeds the results.

use super::conn::Conn;
use super::reply::decision;
use crate::limiter::contract::Decision;
use crate::policy::Policy;
use redis::Script;

pub(super) const SLIDING_LOG: &str = include_str!(concat!(env!("OUT_DIR"), "/sliding_log.lua"));
pub(super) const FIXED_WINDOW: &str = include_str!(concat!(env!("OUT_DIR"), "/fixed_window.lua"));
pub(super) const SLIDING_WINDOW: &str =
    include_str!(concat!(env!("OUT_DIR"), "/sliding_window.lua"));
pub(super) const SLIDING_COUNTER: &str =
    include_str!(concat!(env!("OUT_DIR"), "/sliding_counter.lua"));
pub(super) const TOKEN_BUCKET: &str = include_str!(concat!(env!("OUT_DIR"), "/token_bucket.lua"));
pub(super) const GCRA: &str = include_str!(concat!(env!("OUT_DIR"), "/gcra.lua"));
pub(super) const FIXED_WINDOW_LEASE: &str =
    include_str!(concat!(env!("OUT_DIR"), "/fixed_window_lease.lua"));

/// A policy's script and its fixed arguments: every script takes
/// `ARGV = {param1, param2, now or "", param4}`.
pub(super) struct PolicyScript {
    script: Script,
    first: u64,
    second: u64,
    /// `None` for the sliding log, whose 4th argument is a unique member.
    fourth: Option<u64>,
}

impl PolicyScript {
    pub(super) fn new(policy: &Policy) -> Self {
        let (source, first, second, fourth) = match *policy {
            Policy::SlidingLog { limit, window_us } => (SLIDING_LOG, limit, window_us, None),
            Policy::FixedWindow { limit, window_us } => (FIXED_WINDOW, limit, window_us, Some(0)),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => (SLIDING_WINDOW, limit, window_us, Some(segments)),
            Policy::SlidingCounter { limit, window_us } => {
                (SLIDING_COUNTER, limit, window_us, Some(0))
            }
            Policy::TokenBucket { capacity, refill } => {
                (TOKEN_BUCKET, capacity, refill.count, Some(refill.per_us))
            }
            Policy::Gcra { rate, burst } => (GCRA, burst, rate.count, Some(rate.per_us)),
        };
        PolicyScript {
            script: Script::new(source),
            first,
            second,
            fourth,
        }
    }

    /// Whether the script's 4th argument is the caller's unique member.
    pub(super) fn needs_member(&self) -> bool {
        self.fourth.is_none()
    }

    /// Runs the script for one decision. With `wait = Some((n, ms))` a
    /// `WAIT n ms` follows it in one pipeline, so both go out on the same
    /// connection: a reconnect between them would leave WAIT counting a
    /// new connection's writes (none) and let an unreplicated decision
    /// pass. Short of `n` acknowledgements the call is an error.
    pub(super) async fn run(
        &self,
        conn: &mut Conn,
        key: &str,
        now: Option<i64>,
        member: &str,
        deadline: Option<i64>,
        wait: Option<(u32, u64)>,
    ) -> redis::RedisResult<Decision> {
        let mut eval = redis::cmd("EVALSHA");
        eval.arg(self.script.get_hash())
            .arg(1)
            .arg(key)
            .arg(self.first)
            .arg(self.second)
            .arg(now.map(|n| n.to_string()).unwrap_or_default());
        match self.fourth {
            Some(v) => eval.arg(v),
            None => eval.arg(member),
        };
        if let Some(d) = deadline {
            eval.arg(d);
        }
        let r: (i64, i64, i64, i64) = match wait {
            None => {
                let mut answer = eval.query_async(conn).await;
                if no_script(&answer) {
                    self.script.load_async(conn).await?;
                    answer = eval.query_async(conn).await;
                }
                answer?
            }
            Some((n, ms)) => {
                let mut both = redis::pipe();
                both.add_command(eval).cmd("WAIT").arg(n).arg(ms);
                let mut answer = both.query_async(conn).await;
                if no_script(&answer) {
                    self.script.load_async(conn).await?;
                    answer = both.query_async(conn).await;
                }
                let (r, acked): ((i64, i64, i64, i64), i64) = answer?;
                if acked < i64::from(n) {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::Io,
                        "too few replicas acknowledged",
                    )));
                }
                r
            }
        };
        if r.0 == -1 {
            // Past the deadline: nothing consumed, and no decision made.
            return Err(redis::RedisError::from((
                redis::ErrorKind::Io,
                "past the deadline of the decision",
            )));
        }
        Ok(decision(r.0 == 1, r.1, r.2, r.3))
    }
}

/// Redis did not have the script (NOSCRIPT): it did not run, so loading it
/// and calling again cannot count twice.
fn no_script<T>(answer: &redis::RedisResult<T>) -> bool {
    matches!(answer, Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn lua_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lua")
    }

    fn prelude() -> String {
        std::fs::read_to_string(lua_dir().join("prelude.lua")).unwrap()
    }

    /// `redis.call('TIME')` however it is spelled: quotes, spacing, pcall.
    fn reads_time(source: &str) -> bool {
        let squashed: String = source
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| if c == '"' { '\'' } else { c })
            .collect();
        squashed.contains("call('TIME')")
    }

    #[test]
    fn every_script_starts_with_the_prelude_once() {
        let prelude = prelude();
        assert!(reads_time(&prelude), "the prelude no longer reads TIME");
        for (name, script) in [
            ("SLIDING_LOG", SLIDING_LOG),
            ("FIXED_WINDOW", FIXED_WINDOW),
            ("SLIDING_WINDOW", SLIDING_WINDOW),
            ("SLIDING_COUNTER", SLIDING_COUNTER),
            ("TOKEN_BUCKET", TOKEN_BUCKET),
            ("GCRA", GCRA),
            ("FIXED_WINDOW_LEASE", FIXED_WINDOW_LEASE),
        ] {
            assert!(
                script.starts_with(&prelude),
                "{name} does not start with the prelude"
            );
            assert_eq!(
                script.matches(&prelude).count(),
                1,
                "{name} repeats the prelude"
            );
            assert!(script.len() > prelude.len(), "{name} is only the prelude");
        }
    }

    #[test]
    fn only_the_prelude_reads_the_clock() {
        let mut scripts = 0;
        let shared = std::fs::read_dir(lua_dir().join("shared")).unwrap();
        for entry in std::fs::read_dir(lua_dir()).unwrap().chain(shared) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".lua") || path == lua_dir().join("prelude.lua") {
                continue;
            }
            scripts += 1;
            let source = std::fs::read_to_string(&path).unwrap();
            assert!(
                !reads_time(&source),
                "lua/{name} calls redis.call('TIME'): the clock is read in lua/prelude.lua"
            );
            assert!(
                !source.contains("local now"),
                "lua/{name} declares `now`: lua/prelude.lua defines it"
            );
        }
        assert!(scripts >= 6, "found only {scripts} scripts in lua/");
    }

    #[test]
    fn both_fixed_windows_share_the_windows_arithmetic() {
        let chunk = std::fs::read_to_string(lua_dir().join("shared/fixed_window.lua")).unwrap();
        for (name, script) in [
            ("FIXED_WINDOW", FIXED_WINDOW),
            ("FIXED_WINDOW_LEASE", FIXED_WINDOW_LEASE),
        ] {
            assert_eq!(script.matches(&chunk).count(), 1, "{name}");
            // The chunk comes after the prelude: it reads `now`.
            assert!(script.find(&chunk) >= Some(prelude().len()), "{name}");
        }
        for (name, script) in [
            ("SLIDING_LOG", SLIDING_LOG),
            ("FIXED_WINDOW", FIXED_WINDOW),
            ("SLIDING_WINDOW", SLIDING_WINDOW),
            ("SLIDING_COUNTER", SLIDING_COUNTER),
            ("TOKEN_BUCKET", TOKEN_BUCKET),
            ("GCRA", GCRA),
            ("FIXED_WINDOW_LEASE", FIXED_WINDOW_LEASE),
        ] {
            assert!(
                !script.lines().any(|l| l.starts_with("--#include")),
                "{name} still has an include line"
            );
        }
    }
}
