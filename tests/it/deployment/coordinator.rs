//! deploy/kubernetes/'s coordinator kept to the controller and its agents:
//! it asks for a password from the Secret `rlbench-coordinator`, the
//! controller's and the agents' coordinator URLs carry that password from
//! the same Secret (from the environment, never a command line), and a
//! NetworkPolicy admits only their pods, on its port.

use super::kubernetes::{env, env_value, Objects, NULL};
use super::ledger::{items, text, texts, Ledger};
use serde_norway::Value;

const SECRET: &str = "rlbench-coordinator";
const KEY: &str = "password";

/// The one container of the pod template of (kind, name): its file and it.
fn container<'a>(objects: &'a Objects, kind: &str, name: &str) -> (String, &'a Value) {
    match objects.get(&(kind.to_string(), name.to_string())) {
        Some((rel, d)) => (
            rel.clone(),
            items(&d["spec"]["template"]["spec"]["containers"])
                .first()
                .unwrap_or(&NULL),
        ),
        None => (format!("deploy/kubernetes ({kind}/{name})"), &NULL),
    }
}

/// Whether env `name` of `c` comes from the Secret's password.
fn from_secret(c: &Value, name: &str) -> bool {
    env(c).get(name).is_some_and(|e| {
        let r = &e["valueFrom"]["secretKeyRef"];
        text(&r["name"]).as_deref() == Some(SECRET) && text(&r["key"]).as_deref() == Some(KEY)
    })
}

pub(super) fn check(l: &mut Ledger, objects: &Objects) {
    let (rel, redis) = container(objects, "Deployment", "coordinator");
    let args = texts(&redis["args"]);
    let asks = args
        .windows(2)
        .any(|w| w[0] == "--requirepass" && w[1] == "$(REDIS_PASSWORD)");
    if !asks || !from_secret(redis, "REDIS_PASSWORD") {
        l.fail(&rel, format!("coordinator: no --requirepass $(REDIS_PASSWORD) from Secret {SECRET} key {KEY} (anyone who reaches it may write to it)"));
    }
    for (kind, name) in [("Job", "rlbench-controller"), ("Job", "rlbench-agents")] {
        let (rel, c) = container(objects, kind, name);
        let url = env_value(c, "RLBENCH_COORDINATOR").unwrap_or_default();
        if !from_secret(c, "RLBENCH_COORDINATOR_PASSWORD")
            || !url.starts_with("redis://:$(RLBENCH_COORDINATOR_PASSWORD)@")
        {
            l.fail(&rel, format!("{name}: RLBENCH_COORDINATOR {url:?} does not carry the password of Secret {SECRET} key {KEY} (RLBENCH_COORDINATOR_PASSWORD)"));
        }
    }
    let (rel, policy) = match objects.get(&("NetworkPolicy".to_string(), "coordinator".to_string()))
    {
        Some((rel, d)) => (rel.clone(), d),
        None => ("deploy/kubernetes".to_string(), &NULL),
    };
    let spec = &policy["spec"];
    let selects = text(&spec["podSelector"]["matchLabels"]["app.kubernetes.io/name"]).as_deref()
        == Some("coordinator");
    let ingress_only = texts(&spec["policyTypes"]) == ["Ingress"];
    let rules = items(&spec["ingress"]);
    let from_ours = !rules.is_empty()
        && rules.iter().all(|r| {
            let from = items(&r["from"]);
            let port = items(&r["ports"])
                .iter()
                .all(|p| p["port"].as_u64() == Some(6379));
            port && !from.is_empty()
                && from.iter().all(|f| {
                    let exprs = items(&f["podSelector"]["matchExpressions"]);
                    let values = |key: &str| {
                        exprs
                            .iter()
                            .find(|e| text(&e["key"]).as_deref() == Some(key))
                            .filter(|e| text(&e["operator"]).as_deref() == Some("In"))
                            .map(|e| texts(&e["values"]))
                    };
                    f["namespaceSelector"].is_null()
                        && f["ipBlock"].is_null()
                        && values("app.kubernetes.io/name").as_deref()
                            == Some(&["rlbench".to_string()][..])
                        && values("app.kubernetes.io/component").is_some_and(|v| {
                            !v.is_empty() && v.iter().all(|c| c == "agent" || c == "controller")
                        })
                })
        });
    if !(selects && ingress_only && from_ours) {
        l.fail(&rel, "NetworkPolicy coordinator: it must select the coordinator's pods and admit only the controller's and the agents' (app.kubernetes.io/name rlbench, component agent or controller) on 6379");
    }
}
