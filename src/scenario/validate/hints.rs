//! The TOML reader's own errors made to say what to write: an unknown key
//! with a known one close to it ("did you mean `timeout`?"), a duration
//! given as a bare number ("write \"10s\""), and a scenario without its
//! `[policy]` (`rlbench init --no-probe` leaves it commented out).

/// Keys whose values are durations (a string with its unit).
const DURATIONS: &[&str] = &[
    "duration",
    "window",
    "timeout",
    "burst_spread",
    "think_time",
    "at",
    "for",
    "lease_ttl",
    "max_server_time",
    "retry_after_max_wait",
    "wait",
    "max_clock_uncertainty",
    "delay",
    "jitter",
    "step",
    "replication_delay",
    "replenish_lateness",
    "clock_resolution",
    "clock_skew",
    "refill_every",
    "expires_in",
    "base",
    "cap",
];

/// What a scenario without `[policy]` is told: the gate judges against
/// the policy, and a guess could fail a correct limiter.
pub(super) const NO_POLICY: &str = "no [policy]: declare the policy your limiter keeps \
    (`rlbench probe URL` finds it; docs/scenarios.md lists the algorithms)";

/// `message` (the reader's, about the value at `at` of `text`) with a hint
/// appended when one applies.
pub(super) fn friendlier(message: &str, text: &str, at: Option<usize>) -> String {
    if message == "missing field `policy`" {
        return NO_POLICY.to_string();
    }
    if let Some(hint) = unknown_key(message) {
        // Right after the key given, before the list of the expected ones.
        if let Some((given, rest)) = message.split_once("`, ") {
            return format!("{given}` — did you mean `{hint}`? ({rest})");
        }
        return format!("{message} — did you mean `{hint}`?");
    }
    if let Some(hint) = at.and_then(|at| bare_duration(message, text, at)) {
        return format!("{message}: {hint}");
    }
    message.to_string()
}

/// "unknown field `timout`, expected one of `rate`, `timeout`, …": the
/// expected key closest to the one given, when it is close.
fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (given, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    expected
        .iter()
        .map(|&k| (strsim::damerau_levenshtein(given, k), k))
        .filter(|&(d, k)| d > 0 && d <= (k.len() / 3).max(1))
        .min()
        .map(|(_, k)| k.to_string())
}

/// "invalid type: integer `10`, expected a string" on a duration's key.
fn bare_duration(message: &str, text: &str, at: usize) -> Option<String> {
    let number = message
        .strip_prefix("invalid type: integer `")
        .or_else(|| message.strip_prefix("invalid type: floating point `"))?
        .split_once("`, expected a string")?
        .0;
    // The key is what precedes `=` on the value's line.
    let line_start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let (key, _) = text.get(line_start..at)?.split_once('=')?;
    let key = key.trim().trim_matches('"');
    DURATIONS
        .contains(&key)
        .then(|| format!("a duration is a string with its unit: write {key} = \"{number}s\" (or \"ms\", \"m\", \"h\")"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_gets_the_close_one_and_a_stranger_none() {
        let message =
            "unknown field `timout`, expected one of `schedule`, `rate`, `timeout`, `keys`";
        assert_eq!(
            friendlier(message, "", None),
            "unknown field `timout` — did you mean `timeout`? (expected one of `schedule`, \
             `rate`, `timeout`, `keys`)"
        );
        let far = "unknown field `colour`, expected one of `schedule`, `rate`, `timeout`";
        assert_eq!(friendlier(far, "", None), far);
        let swapped = "unknown field `rtae`, expected `rate` or `keys`";
        assert!(friendlier(swapped, "", None).contains("did you mean `rate`?"));
    }

    #[test]
    fn a_bare_number_for_a_duration_says_to_write_its_unit() {
        let text = "name = \"x\"\nduration = 10\n";
        let at = text.find("10").unwrap();
        let message = "invalid type: integer `10`, expected a string";
        assert_eq!(
            friendlier(message, text, Some(at)),
            format!(
                "{message}: a duration is a string with its unit: write duration = \"10s\" (or \"ms\", \"m\", \"h\")"
            )
        );
        // Not a duration's key: as it was.
        let text = "name = 10\n";
        assert_eq!(friendlier(message, text, Some(7)), message);
        let text = "[load]\ntimeout = 2.5\n";
        let floating = "invalid type: floating point `2.5`, expected a string";
        assert!(friendlier(floating, text, text.find("2.5")).contains("write timeout = \"2.5s\""));
    }
}
