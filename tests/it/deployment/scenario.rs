//! The controller's scenario against the stack it is sent to, read by
//! rlbench's own scenario reader (durations, policy and target as `rlbench
//! run` takes them) and the replicas' config by the reference API's own
//! (`ReplicaConfig`); and every flag the files give rlbench, against what
//! its `--help` lists.

use super::ledger::{host_port, Ledger};
use reference_api::ReplicaConfig;
use rlbench::testing::external_outline;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The config every replica of the stack runs (`--config`).
const REPLICA: &str = "reference-api/docker/replica.json";
/// Where the reference API takes its limited requests.
const API_PATH: &str = "/api/transfers";

/// The controller's scenario `rel`: an external target, allowed off
/// loopback, whose URLs are the `services` (host, the port it listens on)
/// and whose policy and key header are the replicas'. `services_are` says
/// where the ports come from, for a failure's line.
pub(super) fn scenario(
    l: &mut Ledger,
    rel: &str,
    services: &[(&str, Option<u16>)],
    services_are: &str,
) {
    let outline = match external_outline(&l.path(rel)) {
        Err(e) => return l.fail(rel, e),
        Ok(None) => {
            return l.fail(
                rel,
                "[target] kind is not \"external\" (the stack runs the replicas)",
            )
        }
        Ok(Some(o)) => o,
    };
    if !outline.allow_remote {
        l.fail(
            rel,
            "[target] allow_remote is not true: the stack is off the controller's loopback",
        );
    }
    if outline.path.as_deref() != Some(API_PATH) {
        let path = &outline.path;
        l.fail(
            rel,
            format!("[target] path is {path:?}, not the reference API's {API_PATH:?}"),
        );
    }
    if outline.urls.is_empty() {
        l.fail(rel, "[target] urls is empty");
    }
    let hosts: Vec<&str> = services.iter().map(|(h, _)| *h).collect();
    for url in &outline.urls {
        let found = host_port(url, &["http"], 80).and_then(|(h, p)| {
            services
                .iter()
                .find(|(s, _)| *s == h)
                .map(|(_, want)| (h, p, want))
        });
        match found {
            None => l.fail(
                rel,
                format!("{url}: not http:// to one of {hosts:?} ({services_are})"),
            ),
            Some((h, p, want)) if Some(p) != *want => l.fail(
                rel,
                format!("{url}: {h} listens on {want:?} ({services_are})"),
            ),
            Some(_) => {}
        }
    }
    let Some(replicas) = replica_config(l) else {
        return;
    };
    let header = &replicas.key_header;
    if !(outline.key_header.as_deref()).is_some_and(|h| h.eq_ignore_ascii_case(header)) {
        let mine = &outline.key_header;
        l.fail(
            rel,
            format!("[target] key_header {mine:?} is not the replicas' {header:?}"),
        );
    }
    for policy in &outline.policies {
        if *policy != replicas.policy {
            let theirs = &replicas.policy;
            l.fail(
                rel,
                format!("the policy {policy:?} is not the replicas' ({REPLICA}: {theirs:?})"),
            );
        }
    }
}

/// The replicas' config, read as `reference-api --config` reads it.
fn replica_config(l: &mut Ledger) -> Option<ReplicaConfig> {
    let read = std::fs::read_to_string(l.path(REPLICA))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<ReplicaConfig>(&t).map_err(|e| e.to_string()));
    read.map_err(|e| l.fail(REPLICA, e)).ok()
}

/// Every subcommand and flag the files give rlbench (where, the command
/// line after `rlbench`) is one its `--help` lists: a renamed flag fails
/// here, not on a user's cluster.
pub(super) fn command_lines(l: &mut Ledger, commands: &[(String, Vec<String>)]) {
    for (at, cmd) in commands {
        let Some(sub) = cmd.first() else { continue };
        let Some(help) = help_of(sub) else {
            l.fail(at, format!("rlbench {sub} --help fails"));
            continue;
        };
        for flag in cmd[1..].iter().filter(|a| a.starts_with("--")) {
            if !lists(&help, flag) {
                l.fail(
                    at,
                    format!("rlbench {sub} has no {flag} (rlbench {sub} --help)"),
                );
            }
        }
    }
}

/// `rlbench SUB --help`, run once per subcommand (the binary does not
/// change between the copies checked); `None` when it fails.
fn help_of(sub: &str) -> Option<String> {
    static HELP: Mutex<BTreeMap<String, Option<String>>> = Mutex::new(BTreeMap::new());
    let mut help = HELP.lock().unwrap();
    let text = help.entry(sub.to_string()).or_insert_with(|| {
        let out = std::process::Command::new(crate::common::bin())
            .args([sub, "--help"])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| crate::common::text(&out.stdout))
    });
    text.clone()
}

/// Whether `help` lists `flag` as a word of its own: after a space, a
/// comma or a line's start, before a space, `,`, `=`, `<`, `[` or the end.
fn lists(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.map_or(true, |c| c.is_whitespace() || c == ',')
            && after.map_or(true, |c| c.is_whitespace() || ",=<[".contains(c))
    })
}
