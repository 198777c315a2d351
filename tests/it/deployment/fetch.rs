//! The command deploy/kubernetes/README.md gives to take report.html off
//! the claim, as far as it can be checked without a cluster: its pod
//! mounts the claim the controller writes its run folders to, it copies
//! the file from where the controller's scenario puts it
//! (`<mount>/<scenario name>/latest/report.html`), and its pod is of the
//! restricted kind the others are.

use super::ledger::Ledger;

const README: &str = "deploy/kubernetes/README.md";
const SCENARIO: &str = "deploy/scenarios/kubernetes.toml";
const CLAIM: &str = "rlbench-reports";

pub(super) fn check(l: &mut Ledger) {
    let text = std::fs::read_to_string(l.path(README)).unwrap_or_default();
    let run = text
        .lines()
        .find(|s| s.starts_with("kubectl run rlbench-fetch "));
    let overrides = run
        .and_then(|s| s.split_once("--overrides='"))
        .and_then(|(_, rest)| rest.split_once('\''))
        .and_then(|(json, _)| serde_json::from_str::<serde_json::Value>(json).ok());
    let Some(o) = overrides else {
        l.fail(
            README,
            "no `kubectl run rlbench-fetch … --overrides='{…}'` to take report.html off the claim",
        );
        return;
    };
    let spec = &o["spec"];
    let claim_volume = spec["volumes"].as_array().and_then(|vs| {
        vs.iter()
            .find(|v| v["persistentVolumeClaim"]["claimName"] == CLAIM)
    });
    let container = &spec["containers"][0];
    let mount = claim_volume.and_then(|v| {
        container["volumeMounts"]
            .as_array()?
            .iter()
            .find(|m| m["name"] == v["name"])?["mountPath"]
            .as_str()
    });
    let Some(mount) = mount else {
        l.fail(
            README,
            format!("the fetch pod does not mount the claim {CLAIM}"),
        );
        return;
    };
    let name = rlbench::testing::outline_file(&l.path(SCENARIO))
        .map(|o| o.name)
        .unwrap_or_default();
    let from = format!("kubectl cp rlbench-fetch:{mount}/{name}/latest/report.html ");
    if !text.lines().any(|s| s.starts_with(&from)) {
        l.fail(
            README,
            format!("no `{from}…`: the report is not fetched from where the controller writes it"),
        );
    }
    let sc = &container["securityContext"];
    let restricted = spec["securityContext"]["runAsNonRoot"] == true
        && spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        && sc["allowPrivilegeEscalation"] == false
        && sc["readOnlyRootFilesystem"] == true
        && sc["capabilities"]["drop"][0] == "ALL";
    if !restricted {
        l.fail(README, "the fetch pod is not of the restricted kind (non-root, RuntimeDefault seccomp, no escalation, ALL dropped, read-only root)");
    }
    if !text.contains("kubectl delete pod rlbench-fetch") {
        l.fail(README, "the fetch pod is never deleted");
    }
}
