//! The scenario as the run folder keeps it (`scenario.toml`): the file's
//! own text, with its secrets hidden — the passwords of its `[redis] url`
//! and `[distributed] coordinator`, the values of its `[target] headers`
//! (an `Authorization` token) and a JWT's shared secret (`[load] key =
//! { jwt }`) — since a run folder is what a CI
//! job uploads and anyone may read. `rlbench report` reads only the
//! expectations back from it, which this leaves as written.

use crate::scenario::Scenario;
use crate::store::StoreError;
use reference_api::redis_url::redact;
use std::path::Path;

/// Writes the copy of the scenario read from `from` (validated as
/// `scenario`) to `to`; when the password cannot be hidden in the text,
/// no copy is kept (the arm records hold the expectations too) and a
/// warning says why.
pub(crate) fn write(from: &Path, scenario: &Scenario, to: &Path) -> Result<(), StoreError> {
    let text = std::fs::read_to_string(from).map_err(|source| StoreError::Read {
        path: from.to_path_buf(),
        source,
    })?;
    match kept(&text, scenario, true) {
        Some(text) => crate::store::atomic::write(to, text.as_bytes()),
        None => {
            tracing::warn!(
                "{}: not copied into the run folder: a secret of it (a password, a \
                 header's value) is written in a way rlbench cannot hide; `rlbench report` \
                 takes the expectations from the arm records instead",
                from.display()
            );
            Ok(())
        }
    }
}

/// What a header's value is shown as.
const HIDDEN_VALUE: &str = "***";

/// The scenario's text as the agents get it: the passwords hidden (they
/// send load to the replicas and never reach Redis), the headers kept
/// (they send them). `None` when a password cannot be hidden.
pub(crate) fn for_agents(text: &str, scenario: &Scenario) -> Option<String> {
    kept(text, scenario, false)
}

/// `text` with the secrets hidden (header values with `headers`); `None`
/// when they cannot be shown to be hidden (written with escapes, say, or
/// equal to something else of the file).
fn kept(text: &str, scenario: &Scenario, hide_headers: bool) -> Option<String> {
    let urls = [
        scenario.redis.url.as_deref(),
        scenario
            .distributed
            .as_ref()
            .and_then(|d| d.coordinator.as_deref()),
    ];
    let mut kept = text.to_string();
    let mut secrets = false;
    for url in urls.into_iter().flatten() {
        let shown = redact(url);
        if shown != url {
            secrets = true;
            kept = kept.replace(url, &shown);
        }
    }
    let headers: Vec<String> = scenario
        .external
        .as_ref()
        .map(|t| {
            t.template
                .headers
                .values()
                .filter_map(|v| v.to_str().ok())
                .filter(|v| !v.is_empty() && *v != HIDDEN_VALUE)
                .map(str::to_string)
                .collect()
        })
        .filter(|_| hide_headers)
        .unwrap_or_default();
    secrets |= !headers.is_empty();
    for v in &headers {
        for quote in ['"', '\''] {
            kept = kept.replace(
                &format!("{quote}{v}{quote}"),
                &format!("{quote}{HIDDEN_VALUE}{quote}"),
            );
        }
    }
    // A JWT's shared secret mints every key's token: as secret as a
    // header's value, and needed by the agents that mint them.
    let jwt = match &scenario.load.key {
        crate::scenario::KeySpec::Jwt(j) => match &j.secret {
            crate::scenario::JwtSecret::Shared(s) if s != JWT_HIDDEN => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
    .filter(|_| hide_headers);
    if let Some(s) = &jwt {
        secrets = true;
        for quote in ['"', '\''] {
            kept = kept.replace(
                &format!("{quote}{s}{quote}"),
                &format!("{quote}{JWT_HIDDEN}{quote}"),
            );
        }
    }
    if !secrets {
        return Some(kept);
    }
    // Proof, not hope: read back, the copy hides every secret and keeps
    // every arm and expectation as they were.
    let again = crate::scenario::parse("scenario.toml", &kept).ok()?;
    let hidden = |a: Option<&str>, b: Option<&str>| a.map(redact).as_deref() == b;
    let same_arms = again.arms.len() == scenario.arms.len()
        && again
            .arms
            .iter()
            .zip(&scenario.arms)
            .all(|(a, b)| a.name == b.name && a.expect == b.expect);
    let headers_hidden = !hide_headers
        || again.external.as_ref().map_or(headers.is_empty(), |t| {
            t.template
                .headers
                .values()
                .all(|v| v.to_str().is_ok_and(|v| v.is_empty() || v == HIDDEN_VALUE))
        });
    (hidden(scenario.redis.url.as_deref(), again.redis.url.as_deref())
        && hidden(
            scenario
                .distributed
                .as_ref()
                .and_then(|d| d.coordinator.as_deref()),
            again
                .distributed
                .as_ref()
                .and_then(|d| d.coordinator.as_deref()),
        )
        && headers_hidden
        && (jwt.is_none() || jwt_hidden(&again))
        && same_arms)
        .then_some(kept)
}

/// What a JWT's shared secret reads as in the run folder (long enough to
/// read back as one).
const JWT_HIDDEN: &str = "(hidden by rlbench)";

fn jwt_hidden(again: &Scenario) -> bool {
    matches!(&again.load.key, crate::scenario::KeySpec::Jwt(j)
        if j.secret == crate::scenario::JwtSecret::Shared(JWT_HIDDEN.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
name = "s"
duration = "1s"
[policy]
algorithm = "fixed_window"
limit = 5
window = "1s"
[redis]
url = "URL"
[load]
rate = 10
[[arms]]
name = "lua"
mode = "redis_lua"
[arms.expect]
max_definite_violations = 0
"#;

    fn copy_of(url_as_written: &str) -> Option<String> {
        let text = SCENARIO.replace("\"URL\"", url_as_written);
        let scenario = crate::scenario::parse("s.toml", &text).unwrap();
        kept(&text, &scenario, true)
    }

    #[test]
    fn the_password_is_hidden_and_the_rest_kept() {
        let copy = copy_of("\"redis://:pa55w0rd@127.0.0.1:6379\"").unwrap();
        assert!(!copy.contains("pa55w0rd"), "{copy}");
        assert!(
            copy.contains("url = \"redis://:***@127.0.0.1:6379\""),
            "{copy}"
        );
        assert_eq!(
            copy.replace(":***@", ":pa55w0rd@"),
            SCENARIO.replace("URL", "redis://:pa55w0rd@127.0.0.1:6379")
        );
        let literal = copy_of("'rediss://u:pa55w0rd@example.com:6380'").unwrap();
        assert!(
            literal.contains("'rediss://u:***@example.com:6380'"),
            "{literal}"
        );
    }

    #[test]
    fn a_jwt_secret_is_hidden_from_the_folder_and_kept_for_the_agents() {
        let text = r#"
name = "s"
duration = "1s"
[target]
kind = "external"
urls = ["http://127.0.0.1:9"]
[policy]
algorithm = "fixed_window"
limit = 5
window = "1s"
[load]
rate = 10
key = { jwt = { secret = "the-minting-secret-0001" } }
[[arms]]
name = "api"
"#;
        let scenario = crate::scenario::parse("s.toml", text).unwrap();
        let copy = kept(text, &scenario, true).unwrap();
        assert!(!copy.contains("the-minting-secret-0001"), "{copy}");
        assert!(copy.contains("secret = \"(hidden by rlbench)\""), "{copy}");
        let theirs = for_agents(text, &scenario).unwrap();
        assert!(theirs.contains("the-minting-secret-0001"), "{theirs}");
    }

    #[test]
    fn without_a_password_the_text_is_kept_as_is() {
        let copy = copy_of("\"redis://127.0.0.1:6379\"").unwrap();
        assert_eq!(copy, SCENARIO.replace("URL", "redis://127.0.0.1:6379"));
    }

    #[test]
    fn a_coordinators_password_and_header_values_are_hidden() {
        let text = r#"
name = "s"
duration = "1s"
[target]
kind = "external"
urls = ["http://127.0.0.1:9"]
headers = { Authorization = "Bearer s3cr3t-t0ken", "X-Api-Key" = 'k3y' }
[policy]
algorithm = "fixed_window"
limit = 5
window = "1s"
[load]
rate = 10
[distributed]
agents = 2
coordinator = "redis://:c00rd@127.0.0.1:6379"
[[arms]]
name = "api"
"#;
        let scenario = crate::scenario::parse("s.toml", text).unwrap();
        let copy = kept(text, &scenario, true).unwrap();
        // The agents' copy keeps the headers they send.
        let theirs = for_agents(text, &scenario).unwrap();
        assert!(
            theirs.contains("s3cr3t-t0ken") && !theirs.contains("c00rd"),
            "{theirs}"
        );
        for secret in ["s3cr3t-t0ken", "k3y", "c00rd"] {
            assert!(!copy.contains(secret), "{secret}: {copy}");
        }
        assert!(copy.contains(r#"Authorization = "***""#), "{copy}");
        assert!(copy.contains("redis://:***@127.0.0.1:6379"), "{copy}");
        // A header value that is also an arm's name cannot be hidden
        // without changing the arm: no copy.
        let clash = text.replace("name = \"api\"", "name = \"k3y\"");
        let scenario = crate::scenario::parse("s.toml", &clash).unwrap();
        assert_eq!(kept(&clash, &scenario, true), None);
    }

    #[test]
    fn a_password_written_with_escapes_means_no_copy() {
        assert_eq!(
            copy_of("\"redis://:pa\\u0035\\u0035w0rd@127.0.0.1:6379\""),
            None
        );
    }
}
