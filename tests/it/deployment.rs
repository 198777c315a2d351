//! The deployment files agree — docker-compose.yml, deploy/kubernetes/,
//! deploy/Dockerfile, deploy/scenarios/ and reference-api/docker/ — with
//! each other and with rlbench: the agent count the controller waits for
//! is the count started, every Redis URL names a service on its port, the
//! controller's scenario targets the load balancer on its port with the
//! replicas' own policy, the agents' Job is Indexed with the command a
//! Job's pod needs, every file a command names is in the image, every flag
//! given rlbench is one it has. Read with rlbench's own readers: the
//! scenario reader (testing::external_outline), the reference API's config
//! and mode names. No Docker, no cluster: scripts/deploy-check.sh checks
//! each file's shape (docker-compose config, kubernetes-validate) and runs
//! `rlbench check` on the scenarios. Then each of a list of broken copies,
//! one mistake each, must be refused: a check that cannot fail is no check.

mod compose;
mod coordinator;
mod fetch;
mod image;
mod kubernetes;
mod ledger;
mod scenario;

use ledger::Ledger;
use std::path::{Path, PathBuf};

/// What is wrong with the deployment files under `root`, one line each.
fn check(root: &Path) -> Vec<String> {
    let mut l = Ledger {
        root: root.to_path_buf(),
        failures: Vec::new(),
    };
    let image = image::Image::read(&mut l);
    let mut commands = compose::check(&mut l, &image);
    commands.extend(kubernetes::check(&mut l, &image));
    fetch::check(&mut l);
    scenario::command_lines(&mut l, &commands);
    l.failures
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_deployment_files_agree() {
    let failures = check(&repository());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One mistake each: the file, a text in it, what replaces it (every
/// occurrence), what that breaks. scripts/deploy-check.sh keeps the
/// mistakes a file's shape shows (docker-compose config, kubernetes-validate).
const BROKEN: &[(&str, &str, &str, &str)] = &[
    ("docker-compose.yml", "\n  agent:\n", "\n  agents:\n", "a service renamed"),
    ("docker-compose.yml", "RLBENCH_MODE:-redis_lua", "RLBENCH_MODE:-redis-lua", "an unknown default mode"),
    ("docker-compose.yml", "    networks: [coordination]\n", "", "the coordinator on the network every service shares"),
    ("docker-compose.yml", "coordination: { internal: true }", "coordination: {}", "the coordinator's network with a way out"),
    ("docker-compose.yml", r#""redis://coordinator:6379", "--allow-remote-targets""#, r#""redis://cache:6379", "--allow-remote-targets""#, "agents on another coordinator"),
    ("docker-compose.yml", r#""redis://coordinator:6379", "--allow-remote-targets""#, r#""redis://coordinator:6379""#, "agents that may not reach the target"),
    ("docker-compose.yml", "\n      - \"3\"\n", "\n      - \"4\"\n", "the controller waits for 4 agents of 3"),
    ("docker-compose.yml", "\n      replicas: 3\n", "\n      replicas: 2\n", "2 agents started for a controller waiting for 3"),
    ("docker-compose.yml", "- reports:/rlbench/reports", "- reports:/reports", "the run folders off the volume"),
    ("docker-compose.yml", r#""--name", "r1""#, r#""--name", "r2""#, "two replicas of one name"),
    ("docker-compose.yml", "RLBENCH_COORDINATOR_TOKEN: ${RLBENCH_COORDINATOR_TOKEN:?set RLBENCH_COORDINATOR_TOKEN, e.g. to the output of openssl rand -hex 16}\n    deploy:", "RLBENCH_COORDINATOR_TOKENS: ${RLBENCH_COORDINATOR_TOKEN:?set RLBENCH_COORDINATOR_TOKEN, e.g. to the output of openssl rand -hex 16}\n    deploy:", "agents without the controller's token"),
    ("reference-api/docker/nginx.conf", "server r2:8080;", "server r3:8080;", "nginx balancing to no replica"),
    ("reference-api/docker/replica.json", r#""limit": 10"#, r#""limit": 20"#, "replicas enforcing another policy than the scenarios judge"),
    ("deploy/Dockerfile", "\nCOPY deploy/scenarios/", "\n# COPY deploy/scenarios/", "scenarios not in the image"),
    ("deploy/Dockerfile", "\nWORKDIR /rlbench", "\nWORKDIR /work", "another working folder"),
    ("deploy/scenarios/compose.toml", "http://nginx:8080", "http://nginx:80", "the scenario on a port nginx does not listen on"),
    ("deploy/scenarios/compose.toml", "\nwindow = \"2s\"", "\nwindow = \"3s\"", "the scenario judging another policy"),
    ("deploy/scenarios/kubernetes.toml", "\nallow_remote = true", "\nallow_remote = false", "a remote target without the opt-in"),
    ("deploy/scenarios/kubernetes.toml", "\nburst = 300", "\nburts = 300", "a misspelt scenario key"),
    ("deploy/kubernetes/agents.yaml", "\n  parallelism: 3", "\n  paralelism: 3", "a misspelt Job field"),
    ("deploy/kubernetes/agents.yaml", "completionMode: Indexed", "completionMode: NonIndexed", "agents with no index"),
    ("deploy/kubernetes/agents.yaml", "\n  parallelism: 3", "\n  parallelism: 2", "parallelism below completions"),
    ("deploy/kubernetes/agents.yaml", r#"{ name: RLBENCH_AGENTS, value: "3" }"#, r#"{ name: RLBENCH_AGENTS, value: "4" }"#, "RLBENCH_AGENTS not the pod count"),
    ("deploy/kubernetes/agents.yaml", r#"args: ["agent", "--once", "#, r#"args: ["agent", "#, "agent pods that never exit"),
    ("deploy/kubernetes/agents.yaml", r#", "--idle-timeout", "5m"]"#, "]", "agents that wait out the deadline for a controller that never came"),
    ("deploy/kubernetes/agents.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "containers that may escalate their privileges"),
    ("deploy/kubernetes/controller.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "a container that may write to its root filesystem"),
    ("deploy/kubernetes/agents.yaml", "        seccompProfile: { type: RuntimeDefault }", "        seccompProfile: { type: Unconfined }", "agents without the runtime's seccomp profile"),
    ("deploy/kubernetes/agents.yaml", "\n  ttlSecondsAfterFinished: 3600", "\n  # no ttl", "a finished Job kept forever"),
    ("deploy/kubernetes/agents.yaml", "topologySpreadConstraints:", "topologySpreadConstraint:", "a misspelt spread (and none)"),
    ("deploy/kubernetes/agents.yaml", "restartPolicy: Never", "restartPolicy: Always", "a restart policy no Job takes"),
    ("deploy/kubernetes/agents.yaml", "\nkind: Job", "\nkind: Jobs", "an unknown kind"),
    ("deploy/kubernetes/agents.yaml", r#"@coordinator:6379" }"#, r#"@coordinator:6380" }"#, "agents on a port the coordinator does not serve"),
    ("deploy/kubernetes/agents.yaml", r#"value: "redis://:$(RLBENCH_COORDINATOR_PASSWORD)@"#, r#"value: "redis://"#, "agents on the coordinator without its password"),
    ("deploy/kubernetes/coordinator.yaml", r#", "--requirepass", "$(REDIS_PASSWORD)"]"#, "]", "a coordinator anyone who reaches it may write to"),
    ("deploy/kubernetes/coordinator.yaml", "values: [\"agent\", \"controller\"]", "values: [\"agent\", \"controller\", \"replica\"]", "a coordinator the replicas' pods may reach"),
    ("deploy/kubernetes/coordinator.yaml", "kind: NetworkPolicy", "kind: NetworkPolicies", "no NetworkPolicy for the coordinator"),
    ("deploy/kubernetes/agents.yaml", "secretKeyRef: { name: rlbench-coordinator, key: token }", "secretKeyRef: { name: rlbench-coordinator, key: other }", "agents signing with another token than the controller"),
    ("deploy/kubernetes/redis.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "Redis allowed to run as root"),
    ("deploy/kubernetes/redis.yaml", "port: 6379, targetPort: redis", "port: 6380, targetPort: redis", "the Redis Service on another port"),
    ("deploy/kubernetes/redis.yaml", "targetPort: redis", "targetPort: db", "a Service to a port the pod does not open"),
    ("deploy/kubernetes/reference-api.yaml", "            requests: { cpu: 250m, memory: 64Mi }", "            limits: { cpu: 250m, memory: 64Mi }", "a replica with no resource requests"),
    ("deploy/kubernetes/reference-api.yaml", "port: 8080, targetPort: http", "port: 80, targetPort: http", "the replicas' Service off the scenario's port"),
    ("deploy/kubernetes/reference-api.yaml", "value: redis_lua", "value: redis-lua", "an unknown mode"),
    ("deploy/kubernetes/controller.yaml", "persistentVolumeClaim: { claimName: rlbench-reports }", "emptyDir: {}", "run folders that go with the pod"),
    ("deploy/kubernetes/controller.yaml", r#"@coordinator:6379" }"#, r#"@redis:6379" }"#, "the controller on the limiter's Redis"),
    ("deploy/kubernetes/README.md", r#""claimName":"rlbench-reports""#, r#""claimName":"reports""#, "a report fetched from another claim"),
    ("deploy/kubernetes/README.md", ":/reports/kubernetes/latest/", ":/reports/k8s/latest/", "a report fetched from where no run folder is"),
    ("deploy/kubernetes/controller.yaml", "backoffLimit: 0", "backoffLimit: 2", "a controller retried (the load sent again)"),
    ("deploy/kubernetes/controller.yaml", "\n            - \"3\"\n", "\n            - \"2\"\n", "the controller waiting for 2 agents of 3"),
    ("deploy/kubernetes/controller.yaml", "deploy/scenarios/kubernetes.toml", "deploy/scenarios/k8s.toml", "a scenario that is not there"),
    ("deploy/kubernetes/controller.yaml", "            - --format", "            - --formats", "a flag rlbench does not have"),
];

/// The deployment files of the repository, copied to `to`.
fn copy_files(to: &Path) {
    let from = repository();
    std::fs::copy(
        from.join("docker-compose.yml"),
        to.join("docker-compose.yml"),
    )
    .unwrap();
    crate::common::copy_dir(&from.join("deploy"), &to.join("deploy"));
    let docker = "reference-api/docker";
    crate::common::copy_dir(&from.join(docker), &to.join(docker));
}

#[test]
fn each_broken_copy_is_refused() {
    let mut passed = Vec::new();
    for (file, from, to, why) in BROKEN {
        let text = std::fs::read_to_string(repository().join(file)).unwrap();
        assert!(text.contains(from), "{file}: no {from:?} in it: fix BROKEN");
        let dir = tempfile::tempdir().unwrap();
        copy_files(dir.path());
        std::fs::write(dir.path().join(file), text.replace(from, to)).unwrap();
        match check(dir.path()).first() {
            Some(reason) => eprintln!("refused  {file:<38} {why}\n         {reason}"),
            None => passed.push(format!("{file}: {why} ({from:?} → {to:?})")),
        }
    }
    assert!(
        passed.is_empty(),
        "broken copies passed:\n{}",
        passed.join("\n")
    );
}
