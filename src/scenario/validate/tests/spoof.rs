//! `[load] principals`, `spoof`, `forged_keys` and `[[arms]] key_from`.

use super::super::super::parse;
use super::error_of;
use crate::scenario::spec::{KeyFrom, KeySpec, Spoof};

const SPOOFING: &str = r#"
name = "spoof"
duration = "2s"

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[load]
rate = 100
principals = 3
spoof = "rotate_key"
key = { jwt = { secret = "a secret of the test" } }

[[arms]]
name = "header"
mode = "local"
key_from = "header"

[[arms]]
name = "jwt"
mode = "local"
key_from = "jwt"

[[arms]]
name = "plain"
mode = "local"
"#;

#[test]
fn principals_replace_keys_and_each_arm_says_where_its_key_is() {
    let s = parse("s.toml", SPOOFING).unwrap();
    assert_eq!(s.load.keys, 3, "the principals are the load's keys");
    assert_eq!(
        s.load.spoof,
        Some(Spoof {
            forged_keys: 100,
            rotate_key: true,
            forwarded_for: false
        })
    );
    assert!(matches!(s.load.key, KeySpec::Jwt(_)));
    let from: Vec<_> = s.arms.iter().map(|a| a.key_from).collect();
    assert_eq!(from, [Some(KeyFrom::Header), Some(KeyFrom::Jwt), None]);
    let both = SPOOFING.replace(
        "spoof = \"rotate_key\"",
        "spoof = [\"rotate_key\", \"forwarded_for\"]\nforged_keys = 7",
    );
    let s = parse("s.toml", &both).unwrap();
    assert_eq!(
        s.load.spoof,
        Some(Spoof {
            forged_keys: 7,
            rotate_key: true,
            forwarded_for: true
        })
    );
    // Without a JWT: forging the header or the address only.
    let plain = SPOOFING
        .replace(
            "key = { jwt = { secret = \"a secret of the test\" } }\n",
            "",
        )
        .replace("key_from = \"jwt\"", "key_from = \"forwarded_for\"");
    let s = parse("s.toml", &plain).unwrap();
    assert_eq!(s.arms[1].key_from, Some(KeyFrom::ForwardedFor));
}

#[test]
fn spoofing_mistakes_are_one_line_at_their_place() {
    let cases = [
        // Each needs the other.
        (
            SPOOFING.replace("spoof = \"rotate_key\"\n", ""),
            "s.toml:12:14: principals needs spoof",
        ),
        (
            SPOOFING.replace("principals = 3\n", ""),
            "s.toml:12:9: spoof needs principals",
        ),
        (
            SPOOFING.replace("principals = 3\n", "principals = 3\nkeys = 5\n"),
            "keys and principals both count the callers",
        ),
        (
            SPOOFING.replace("spoof = \"rotate_key\"", "spoof = \"rotate_ip\""),
            "unknown spoof \"rotate_ip\", expected \"rotate_key\", \"forwarded_for\"",
        ),
        (
            SPOOFING.replace("spoof = \"rotate_key\"", "spoof = []"),
            "spoof: expected",
        ),
        (
            SPOOFING.replace("spoof = \"rotate_key\"", "spoof = [1]"),
            "spoof: expected",
        ),
        (
            SPOOFING.replace("principals = 3", "principals = 0"),
            "principals must be between 1 and 100000, got 0",
        ),
        (
            SPOOFING.replace("principals = 3", "principals = 100000\nforged_keys = 100"),
            "principals × forged_keys = 10000000 identities; at most 1000000",
        ),
        (
            SPOOFING.replace("principals = 3", "principals = 3\nforged_keys = 1"),
            "forged_keys must be between 2 and 100000",
        ),
        (
            SPOOFING
                .replace("principals = 3\n", "")
                .replace("spoof = \"rotate_key\"\n", "forged_keys = 5\n"),
            "forged_keys needs principals and spoof",
        ),
        // What the principals carry: a key header, a JWT beside it.
        (
            SPOOFING.replace(
                "key = { jwt = { secret = \"a secret of the test\" } }",
                "key = { forwarded_for = true }",
            ),
            "with principals, [load] key is the key header",
        ),
        // Where an arm's key is.
        (
            SPOOFING.replace(
                "key = { jwt = { secret = \"a secret of the test\" } }\n",
                "",
            ),
            "key_from = \"jwt\" needs [load] key = { jwt",
        ),
        (
            SPOOFING.replace("key_from = \"header\"", "key_from = \"cookie\""),
            "unknown key_from \"cookie\", expected header, jwt or forwarded_for",
        ),
        (
            SPOOFING
                .replace("principals = 3\n", "keys = 3\n")
                .replace("spoof = \"rotate_key\"\n", ""),
            "key_from chooses where the reference API finds the key",
        ),
    ];
    for (text, expected) in cases {
        let e = error_of(&text);
        assert!(e.contains(expected), "{expected}\n  got: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn an_external_target_spoofed_needs_a_key_header_and_keeps_it_beside_a_jwt() {
    let external = |key_header: &str| {
        format!(
            r#"
name = "ext"
duration = "2s"

[target]
kind = "external"
urls = ["http://127.0.0.1:8080"]
{key_header}

[policy]
preset = "nginx_limit_req"
rate = "10r/s"

[load]
rate = 100
principals = 2
spoof = "rotate_key"
key = {{ jwt = {{ secret = "a secret of the test" }} }}

[[arms]]
name = "one"
"#
        )
    };
    let s = parse("s.toml", &external("key_header = \"X-Customer-Id\"")).unwrap();
    let t = &s.external.as_ref().unwrap().template;
    assert_eq!(
        t.key_header.as_ref().unwrap().as_str(),
        "x-customer-id",
        "the forged key's header stays; the token goes beside it"
    );
    assert!(matches!(s.load.key, KeySpec::Jwt(_)));
    let e = error_of(&external(""));
    assert!(e.contains("give [target] key_header"), "{e}");
    let e = error_of(
        &external("key_header = \"X-Customer-Id\"")
            .replace("name = \"one\"", "name = \"one\"\nkey_from = \"jwt\""),
    );
    assert!(e.contains("key_from configures the reference API"), "{e}");
}
