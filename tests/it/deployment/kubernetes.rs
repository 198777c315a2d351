//! deploy/kubernetes/: the objects named, each Service on a port its
//! Deployment opens, every pod under the restricted Pod Security Standard,
//! the replicas in a mode of the reference API's own vocabulary, and the
//! agents' Indexed Job and the controller's Job agreeing with each other,
//! with the image and with the controller's scenario.

use super::image::Image;
use super::ledger::{host_port, items, text, texts, Ledger};
use super::ledger::{DEFAULT_MODE, REPORTS};
use super::scenario::scenario;
use reference_api::config::{mode_list, mode_named};
use serde::Deserialize;
use serde_norway::Value;
use std::collections::{BTreeMap, BTreeSet};

const FOLDER: &str = "deploy/kubernetes";
/// Every object of the folder, by kind and name.
const OBJECTS: [(&str, &str); 10] = [
    ("Deployment", "coordinator"),
    ("Deployment", "redis"),
    ("Deployment", "reference-api"),
    ("Job", "rlbench-agents"),
    ("Job", "rlbench-controller"),
    ("NetworkPolicy", "coordinator"),
    ("PersistentVolumeClaim", "rlbench-reports"),
    ("Service", "coordinator"),
    ("Service", "redis"),
    ("Service", "reference-api"),
];

pub(super) static NULL: Value = Value::Null;

/// The folder's objects by (kind, name): the file each is in, and itself.
pub(super) type Objects = BTreeMap<(String, String), (String, Value)>;

/// One pod template: the file, its object, its spec, its one container.
struct Pod<'a> {
    rel: String,
    object: &'a Value,
    spec: &'a Value,
    container: &'a Value,
}

/// The objects read, checked into the ledger.
struct Cluster<'a> {
    l: &'a mut Ledger,
    image: &'a Image,
    objects: &'a Objects,
    /// Each Service's one port, by the Service's name.
    service_port: BTreeMap<String, Option<u16>>,
}

/// Checks the folder; the rlbench command lines its Jobs hold (for their flags).
pub(super) fn check(l: &mut Ledger, image: &Image) -> Vec<(String, Vec<String>)> {
    let objects = read(l);
    let found: Vec<(&str, &str)> = objects
        .keys()
        .map(|(k, n)| (k.as_str(), n.as_str()))
        .collect();
    if found != OBJECTS {
        l.fail(FOLDER, format!("objects are {found:?}, not {OBJECTS:?}"));
    }
    let mut k = Cluster {
        l,
        image,
        objects: &objects,
        service_port: BTreeMap::new(),
    };
    k.services();
    k.pods_restricted();
    super::coordinator::check(k.l, &objects);
    let rlbench_image = k.reference_api();
    let (controller_at, controller) = k.controller();
    let agents = k.agents(&controller, rlbench_image);
    vec![
        (controller_at, texts(&controller.container["args"])),
        (agents.0, agents.1),
    ]
}

/// Every YAML document of the folder's files, by kind and name.
fn read(l: &mut Ledger) -> Objects {
    let mut objects = Objects::new();
    let mut files: Vec<_> = std::fs::read_dir(l.path(FOLDER))
        .map(|dir| dir.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    for path in files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let rel = format!("{FOLDER}/{name}");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let d = match Value::deserialize(doc) {
                Ok(Value::Null) => continue,
                Ok(d) => d,
                Err(e) => {
                    l.fail(&rel, e);
                    break;
                }
            };
            let key = (text_of(&d["kind"]), text_of(&d["metadata"]["name"]));
            if objects.contains_key(&key) {
                l.fail(&rel, format!("{}/{} twice", key.0, key.1));
            }
            objects.insert(key, (rel.clone(), d));
        }
    }
    objects
}

fn text_of(v: &Value) -> String {
    text(v).unwrap_or_default()
}

/// A container's env entries by name.
pub(super) fn env(container: &Value) -> BTreeMap<String, &Value> {
    (items(&container["env"]).iter())
        .map(|e| (text_of(&e["name"]), e))
        .collect()
}

/// A container's env value (`value:`) by name.
pub(super) fn env_value(container: &Value, name: &str) -> Option<String> {
    env(container).get(name).and_then(|e| text(&e["value"]))
}

impl<'a> Cluster<'a> {
    fn object(&self, kind: &str, name: &str) -> (String, &'a Value) {
        let objects: &'a Objects = self.objects;
        match objects.get(&(kind.to_string(), name.to_string())) {
            Some((rel, d)) => (rel.clone(), d),
            None => (format!("{FOLDER} ({kind}/{name})"), &NULL),
        }
    }

    fn pod(&mut self, kind: &str, name: &str) -> Pod<'a> {
        let (rel, object) = self.object(kind, name);
        let spec = &object["spec"]["template"]["spec"];
        let containers = items(&spec["containers"]);
        if containers.len() != 1 {
            let n = containers.len();
            self.l
                .fail(&rel, format!("{kind}/{name}: {n} containers, not 1"));
        }
        let container = containers.first().unwrap_or(&NULL);
        Pod {
            rel,
            object,
            spec,
            container,
        }
    }

    /// Each Service selects one Deployment's pods, on a port they open.
    fn services(&mut self) {
        let objects: &'a Objects = self.objects;
        for ((kind, name), (rel, d)) in objects {
            if kind != "Service" {
                continue;
            }
            let selector = d["spec"]["selector"].as_mapping();
            let backends: Vec<&str> = (objects.iter())
                .filter(|((k, _), (_, o))| {
                    let labels = o["spec"]["template"]["metadata"]["labels"].as_mapping();
                    k == "Deployment"
                        && selector.is_some_and(|s| {
                            !s.is_empty()
                                && s.iter()
                                    .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
                        })
                })
                .map(|((_, n), _)| n.as_str())
                .collect();
            let [backend] = backends.as_slice() else {
                self.l.fail(
                    rel,
                    format!("Service/{name} selects {backends:?}, not one Deployment"),
                );
                continue;
            };
            let opened: BTreeSet<String> =
                items(&self.pod("Deployment", backend).container["ports"])
                    .iter()
                    .flat_map(|p| [text(&p["name"]), text(&p["containerPort"])])
                    .flatten()
                    .collect();
            let ports = items(&d["spec"]["ports"]);
            for p in ports {
                let target = if p["targetPort"].is_null() {
                    &p["port"]
                } else {
                    &p["targetPort"]
                };
                if !text(target).is_some_and(|t| opened.contains(&t)) {
                    self.l.fail(
                        rel,
                        format!("Service/{name}: targetPort {target:?} is not a port of {backend}"),
                    );
                }
            }
            if let [p] = ports {
                let port = p["port"].as_u64().and_then(|p| u16::try_from(p).ok());
                self.service_port.insert(name.clone(), port);
            }
        }
    }

    /// `url` is a Service on its port, and that Service is `service`.
    fn redis(&mut self, url: Option<&str>, rel: &str, what: &str, service: &str) {
        let at = host_port(url.unwrap_or_default(), &["redis"], 6379);
        let served = at
            .as_ref()
            .is_some_and(|(h, p)| self.service_port.get(h) == Some(&Some(*p)));
        if !served {
            let ports = &self.service_port;
            self.l.fail(
                rel,
                format!("{what}: {url:?} is not a Service on its port ({ports:?})"),
            );
        } else if at.is_some_and(|(h, _)| h != service) {
            self.l
                .fail(rel, format!("{what}: {url:?} is not the {service} Service"));
        }
    }

    /// Redis is Redis; every pod restricted, with requests; every Job goes
    /// once finished.
    fn pods_restricted(&mut self) {
        for name in ["redis", "coordinator"] {
            let pod = self.pod("Deployment", name);
            let image = text(&pod.container["image"]);
            if !image.as_deref().is_some_and(|i| i.starts_with("redis:")) {
                self.l
                    .fail(&pod.rel, format!("{name}: image {image:?} is not Redis"));
            }
        }
        let objects: &'a Objects = self.objects;
        for ((kind, name), (rel, d)) in objects {
            if kind == "Deployment" || kind == "Job" {
                restricted(
                    self.l,
                    rel,
                    &format!("{kind}/{name}"),
                    &d["spec"]["template"]["spec"],
                );
            }
            if kind == "Job" && !d["spec"]["ttlSecondsAfterFinished"].is_i64() {
                self.l.fail(
                    rel,
                    format!(
                        "Job/{name}: no ttlSecondsAfterFinished (finished Jobs would stay forever)"
                    ),
                );
            }
        }
    }

    /// The replicas: three of the reference API, in a mode of its own
    /// vocabulary, on the limiter's Redis, with a config the image holds,
    /// listening where they say. Their image (rlbench's).
    fn reference_api(&mut self) -> Option<String> {
        let pod = self.pod("Deployment", "reference-api");
        let (rel, c) = (pod.rel.as_str(), pod.container);
        let replicas = &pod.object["spec"]["replicas"];
        if replicas.as_u64() != Some(3) {
            self.l
                .fail(rel, format!("reference-api: {replicas:?} replicas, not 3"));
        }
        let command = texts(&c["command"]);
        if command != ["reference-api"] {
            self.l.fail(
                rel,
                format!("reference-api: command {command:?}, not [reference-api]"),
            );
        }
        match env_value(c, "RLBENCH_MODE") {
            Some(m) if mode_named(&m).is_some() && m != DEFAULT_MODE => self.l.fail(
                rel,
                format!("reference-api: RLBENCH_MODE is {m:?}, not the default {DEFAULT_MODE}"),
            ),
            Some(m) if mode_named(&m).is_some() => {}
            mode => self.l.fail(
                rel,
                format!(
                    "reference-api: RLBENCH_MODE {mode:?} is not one of {}",
                    mode_list()
                ),
            ),
        }
        let url = env_value(c, "RLBENCH_REDIS_URL");
        self.redis(
            url.as_deref(),
            rel,
            "reference-api RLBENCH_REDIS_URL",
            "redis",
        );
        let args = texts(&c["args"]);
        if let Some(config) = self.l.flag(&args, "--config", rel) {
            self.image.holds(self.l, &config, rel);
        }
        let env = env(c);
        for reference in args.iter().flat_map(|a| a.split("$(").skip(1)) {
            let name = reference.split(')').next().unwrap_or_default();
            if !env.contains_key(name) {
                self.l.fail(
                    rel,
                    format!("reference-api: $({name}) in args is not in env"),
                );
            }
        }
        let listen = self.l.flag(&args, "--listen", rel).unwrap_or_default();
        let port = listen.rsplit(':').next().unwrap_or_default();
        let declared: Vec<String> = items(&c["ports"])
            .iter()
            .filter_map(|p| text(&p["containerPort"]))
            .collect();
        if !declared.iter().any(|d| d == port) {
            self.l.fail(
                rel,
                format!("reference-api listens on {port}, not a port it declares"),
            );
        }
        text(&c["image"])
    }

    /// The controller's Job: rlbench run on a scenario the image holds,
    /// against the replicas' Service; one pod, never retried; on the
    /// coordinator; its run folders on a claim of these files.
    fn controller(&mut self) -> (String, Pod<'a>) {
        let pod = self.pod("Job", "rlbench-controller");
        let (rel, c, job) = (pod.rel.as_str(), pod.container, &pod.object["spec"]);
        let args = texts(&c["args"]);
        let command = texts(&c["command"]);
        if !c["command"].is_null() && command != ["rlbench"] {
            self.l.fail(
                rel,
                format!("controller: command {command:?}: rlbench is the image's entry point"),
            );
        }
        match args.as_slice() {
            [run, scenario_file, ..] if run == "run" => {
                self.image.holds(self.l, scenario_file, rel);
                let port = self.service_port.get("reference-api").copied().flatten();
                scenario(
                    self.l,
                    scenario_file,
                    &[("reference-api", port)],
                    "the reference-api Service",
                );
            }
            _ => self.l.fail(
                rel,
                format!("controller: args {args:?} are not run SCENARIO …"),
            ),
        }
        if job["backoffLimit"].as_u64() != Some(0) {
            self.l.fail(rel, format!("controller: backoffLimit {:?}, not 0 (a retry sends the load again, and a failed gate is the answer)", job["backoffLimit"]));
        }
        if text(&pod.spec["restartPolicy"]).as_deref() != Some("Never") {
            self.l.fail(
                rel,
                format!(
                    "controller: restartPolicy {:?}, not Never",
                    pod.spec["restartPolicy"]
                ),
            );
        }
        let once = text(&job["completionMode"]).map_or(true, |m| m == "NonIndexed")
            && job["completions"].as_u64().unwrap_or(1) == 1
            && job["parallelism"].as_u64().unwrap_or(1) == 1;
        if !once {
            self.l.fail(
                rel,
                "controller: one pod, once (no completionMode, completions or parallelism above 1)",
            );
        }
        // From the environment, its password in it: never on a command line.
        if args.iter().any(|a| a == "--coordinator") {
            self.l.fail(rel, "controller: --coordinator on the command line (its password would show in the process list): RLBENCH_COORDINATOR");
        }
        let coordinator = env_value(c, "RLBENCH_COORDINATOR");
        self.redis(
            coordinator.as_deref(),
            rel,
            "controller RLBENCH_COORDINATOR",
            "coordinator",
        );
        let mounts: BTreeMap<String, String> = (items(&c["volumeMounts"]).iter())
            .map(|m| (text_of(&m["mountPath"]), text_of(&m["name"])))
            .collect();
        let volume = (items(&pod.spec["volumes"]).iter()).find(|v| {
            mounts
                .get(REPORTS)
                .is_some_and(|n| text(&v["name"]).as_ref() == Some(n))
        });
        let claim = volume.and_then(|v| text(&v["persistentVolumeClaim"]["claimName"]));
        let key = (
            "PersistentVolumeClaim".to_string(),
            claim.unwrap_or_default(),
        );
        if !self.objects.contains_key(&key) {
            self.l.fail(rel, format!("controller: {REPORTS} is not on a PersistentVolumeClaim of these files (its run folders would go with the pod): {volume:?}"));
        }
        (rel.to_string(), pod)
    }

    /// The agents' Job: Indexed, as many pods as the controller waits
    /// for, each `agent --once` with an idle timeout, allowed off its
    /// loopback, spread over the nodes, on the controller's coordinator
    /// with its Secret, in the replicas' image. Their command line.
    fn agents(
        &mut self,
        controller: &Pod<'a>,
        rlbench_image: Option<String>,
    ) -> (String, Vec<String>) {
        let pod = self.pod("Job", "rlbench-agents");
        let (rel, c, job) = (pod.rel.as_str(), pod.container, &pod.object["spec"]);
        let cargs = texts(&controller.container["args"]);
        let agents = self.l.flag(&cargs, "--agents", &controller.rel);
        let count = env_value(c, "RLBENCH_AGENTS");
        if text(&job["completionMode"]).as_deref() != Some("Indexed") {
            self.l.fail(rel, format!("agents: completionMode {:?}, not Indexed (each pod's JOB_COMPLETION_INDEX is its segment)", job["completionMode"]));
        }
        let counts = [
            text(&job["completions"]),
            text(&job["parallelism"]),
            count.clone(),
            agents,
        ];
        let one: BTreeSet<&Option<String>> = counts.iter().collect();
        let positive = count
            .as_deref()
            .and_then(|c| c.parse::<u32>().ok())
            .is_some_and(|n| n >= 1);
        if one.len() != 1 || !positive {
            self.l.fail(rel, format!("agents: the counts differ (completions, parallelism, RLBENCH_AGENTS, the controller's --agents: all one number): {counts:?}"));
        }
        let restart = text(&pod.spec["restartPolicy"]);
        if !matches!(restart.as_deref(), Some("Never" | "OnFailure")) {
            self.l.fail(
                rel,
                format!("agents: restartPolicy {restart:?}: a Job's pods take Never or OnFailure"),
            );
        }
        if !job["backoffLimit"].is_u64() {
            self.l.fail(
                rel,
                format!(
                    "agents: backoffLimit {:?} is not a count",
                    job["backoffLimit"]
                ),
            );
        }
        if !c["command"].is_null() && texts(&c["command"]) != ["rlbench"] {
            self.l.fail(
                rel,
                format!(
                    "agents: command {:?}: rlbench is the image's entry point",
                    c["command"]
                ),
            );
        }
        let args = texts(&c["args"]);
        if args.get(..2) != Some(&["agent".to_string(), "--once".to_string()][..]) {
            self.l.fail(rel, format!("agents: args {args:?}, not [agent, --once, …] (a Job's pod exits after its run)"));
        }
        if !args.iter().any(|a| a == "--allow-remote-targets") {
            self.l.fail(rel, "agents: no --allow-remote-targets: the scenario's target (a Service) is not the pod's loopback, and only the agent's command line may allow that");
        }
        if !args.iter().any(|a| a == "--idle-timeout") {
            self.l.fail(rel, "agents: no --idle-timeout: agents whose controller never came would wait out the Job's deadline");
        }
        if items(&pod.spec["topologySpreadConstraints"]).is_empty() {
            self.l.fail(
                rel,
                "agents: no topologySpreadConstraints: load machines sharing a node share its CPU",
            );
        }
        let url = env_value(c, "RLBENCH_COORDINATOR");
        self.redis(
            url.as_deref(),
            rel,
            "agents RLBENCH_COORDINATOR",
            "coordinator",
        );
        let secret = |c: &'a Value| {
            env(c)
                .get("RLBENCH_COORDINATOR_TOKEN")
                .copied()
                .map(|e| &e["valueFrom"]["secretKeyRef"])
                .filter(|s| !s.is_null())
        };
        let secrets = (secret(c), secret(controller.container));
        if secrets.0.is_none() || secrets.0 != secrets.1 {
            self.l.fail(rel, format!("agents and controller must take RLBENCH_COORDINATOR_TOKEN from one Secret: {secrets:?}"));
        }
        let coordinator = env_value(controller.container, "RLBENCH_COORDINATOR");
        if url != coordinator {
            self.l.fail(
                rel,
                format!(
                    "agents: RLBENCH_COORDINATOR {url:?} is not the controller's {coordinator:?}"
                ),
            );
        }
        for other in [c, controller.container] {
            let image = text(&other["image"]);
            if image != rlbench_image || rlbench_image.is_none() {
                self.l.fail(rel, format!("image {image:?} is not the replicas' {rlbench_image:?} (one image: deploy/Dockerfile)"));
            }
        }
        (rel.to_string(), args)
    }
}

/// The restricted Pod Security Standard's fields, and resource requests,
/// for every container of the pod (init ones too).
fn restricted(l: &mut Ledger, rel: &str, what: &str, spec: &Value) {
    let pod = &spec["securityContext"];
    if pod["runAsNonRoot"].as_bool() != Some(true) {
        l.fail(rel, format!("{what}: the pod does not set runAsNonRoot: true (restricted Pod Security Standard)"));
    }
    if pod["runAsUser"].as_u64() == Some(0) {
        l.fail(
            rel,
            format!("{what}: runAsUser 0 (restricted Pod Security Standard)"),
        );
    }
    let pod_seccomp = text(&pod["seccompProfile"]["type"]);
    let containers = items(&spec["initContainers"])
        .iter()
        .chain(items(&spec["containers"]));
    for c in containers {
        let name = text_of(&c["name"]);
        let sc = &c["securityContext"];
        if sc["allowPrivilegeEscalation"].as_bool() != Some(false) {
            l.fail(rel, format!("{what}: container {name} does not set allowPrivilegeEscalation: false (restricted Pod Security Standard)"));
        }
        if !texts(&sc["capabilities"]["drop"])
            .iter()
            .any(|d| d == "ALL")
        {
            l.fail(rel, format!("{what}: container {name} does not drop ALL capabilities (restricted Pod Security Standard)"));
        }
        if sc["readOnlyRootFilesystem"].as_bool() != Some(true) {
            l.fail(rel, format!("{what}: container {name} does not set readOnlyRootFilesystem: true (what it writes goes to an emptyDir)"));
        }
        if sc["privileged"].as_bool() == Some(true) {
            l.fail(rel, format!("{what}: container {name} is privileged"));
        }
        let seccomp = text(&sc["seccompProfile"]["type"]).or(pod_seccomp.clone());
        if !matches!(seccomp.as_deref(), Some("RuntimeDefault" | "Localhost")) {
            l.fail(rel, format!("{what}: container {name} has no seccompProfile RuntimeDefault (restricted Pod Security Standard)"));
        }
        if c["resources"]["requests"]
            .as_mapping()
            .map_or(true, |m| m.is_empty())
        {
            l.fail(
                rel,
                format!("{what}: container {name} requests no resources"),
            );
        }
    }
    if items(&spec["volumes"])
        .iter()
        .any(|v| !v["hostPath"].is_null())
    {
        l.fail(
            rel,
            format!("{what}: a hostPath volume (restricted Pod Security Standard)"),
        );
    }
}
