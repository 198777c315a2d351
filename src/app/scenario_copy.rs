//! The scenario as the run folder keeps it (`scenario.toml`): the file's
//! own text, with the password of its `[redis] url` hidden — a run folder
//! is what a CI job uploads and anyone may read. `rlbench report` reads
//! only the expectations back from it, which this leaves as written.

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
    match kept(&text, scenario) {
        Some(text) => crate::store::atomic::write(to, text.as_bytes()),
        None => {
            tracing::warn!(
                "{}: not copied into the run folder: its [redis] url holds a password \
                 written with escapes that rlbench cannot hide; `rlbench report` takes \
                 the expectations from the arm records instead",
                from.display()
            );
            Ok(())
        }
    }
}

/// `text` with the Redis URL's password hidden; `None` when it cannot
/// be shown to be hidden (the URL written with escapes, say).
fn kept(text: &str, scenario: &Scenario) -> Option<String> {
    let Some(url) = &scenario.redis.url else {
        return Some(text.to_string());
    };
    let shown = redact(url);
    if &shown == url {
        return Some(text.to_string());
    }
    let kept = text.replace(url.as_str(), &shown);
    // Proof, not hope: read back, the copy must name the hidden URL.
    let again = crate::scenario::parse("scenario.toml", &kept).ok()?;
    (again.redis.url.as_deref() == Some(shown.as_str())).then_some(kept)
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
        kept(&text, &scenario)
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
    fn without_a_password_the_text_is_kept_as_is() {
        let copy = copy_of("\"redis://127.0.0.1:6379\"").unwrap();
        assert_eq!(copy, SCENARIO.replace("URL", "redis://127.0.0.1:6379"));
    }

    #[test]
    fn a_password_written_with_escapes_means_no_copy() {
        assert_eq!(
            copy_of("\"redis://:pa\\u0035\\u0035w0rd@127.0.0.1:6379\""),
            None
        );
    }
}
