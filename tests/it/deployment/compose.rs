//! docker-compose.yml, read as docker-compose reads it with no variable
//! set (merge keys applied, `${VAR:-default}` its default): the services
//! agree with each other, with the image, with nginx.conf and with the
//! controller's scenario.

use super::image::Image;
use super::ledger::{host_port, items, names, scalars, text, texts, Ledger};
use super::ledger::{DEFAULT_MODE, IMAGE_ROOT, REPORTS};
use super::scenario::scenario;
use reference_api::config::{mode_list, mode_named};
use serde_norway::Value;
use std::collections::BTreeMap;
use std::path::Path;

const AT: &str = "docker-compose.yml";
const SERVICES: [&str; 8] = [
    "agent",
    "controller",
    "coordinator",
    "nginx",
    "r0",
    "r1",
    "r2",
    "redis",
];
const REPLICAS: [&str; 3] = ["r0", "r1", "r2"];

/// The file's services, checked into the ledger.
struct Compose<'a> {
    l: &'a mut Ledger,
    image: &'a Image,
    services: &'a Value,
}

/// Checks the file; the rlbench command lines it holds (for their flags).
pub(super) fn check(l: &mut Ledger, image: &Image) -> Vec<(String, Vec<String>)> {
    let config = match read(&l.path(AT)) {
        Ok(config) => config,
        Err(e) => {
            l.fail(AT, format!("cannot read it: {e}"));
            return Vec::new();
        }
    };
    let mut found = names(&config["services"]);
    found.sort();
    if found != SERVICES {
        l.fail(AT, format!("services are {found:?}, not {SERVICES:?}"));
    }
    let mut c = Compose {
        l,
        image,
        services: &config["services"],
    };
    c.images();
    c.coordination(&config["networks"]);
    let ports = c.replicas();
    let nginx_port = c.nginx(&ports);
    let (agent, coordinator, replicas) = c.agent();
    let controller = c.controller(nginx_port, &coordinator, replicas);
    vec![
        (format!("{AT}: controller"), controller),
        (format!("{AT}: agent"), agent),
    ]
}

/// The file as docker-compose sees it: merge keys (`<<: *image`) applied
/// until none is left, every string value interpolated.
fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut config: Value = serde_norway::from_str(&text).map_err(|e| e.to_string())?;
    // A merged mapping may bring a merge key of its own (x-replica's).
    for _ in 0..8 {
        let before = config.clone();
        config.apply_merge().map_err(|e| e.to_string())?;
        if config == before {
            break;
        }
    }
    interpolate_all(&mut config);
    Ok(config)
}

fn interpolate_all(v: &mut Value) {
    match v {
        Value::String(s) => *s = interpolate(s),
        Value::Sequence(seq) => seq.iter_mut().for_each(interpolate_all),
        Value::Mapping(m) => m.values_mut().for_each(interpolate_all),
        _ => {}
    }
}

/// Compose's interpolation with no variable set: `${NAME:-default}` and
/// `${NAME-default}` are the default; `${NAME:?why}`, `${NAME?why}` and
/// `${NAME}` stay `${NAME}` (a value the user gives, named); `$$` is `$`.
fn interpolate(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(end) = rest.strip_prefix("${").and_then(|r| r.find('}')) {
            let body = &rest[2..2 + end];
            let split = (body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
                .unwrap_or(body.len());
            let (name, op) = body.split_at(split);
            match op.strip_prefix(":-").or_else(|| op.strip_prefix('-')) {
                Some(default) => out.push_str(default),
                None => out.push_str(&format!("${{{name}}}")),
            }
            rest = &rest[2 + end + 1..];
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A volume's source and target, in either of compose's spellings.
fn volume(v: &Value) -> (String, String) {
    if v.is_mapping() {
        let source = text(&v["source"]).unwrap_or_default();
        return (source, text(&v["target"]).unwrap_or_default());
    }
    let short = text(v).unwrap_or_default();
    let mut parts = short.split(':').map(str::to_string);
    (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    )
}

impl<'a> Compose<'a> {
    fn svc(&self, name: &str) -> &'a Value {
        &self.services[name]
    }

    fn depends(&self, name: &str, on: &str) -> bool {
        names(&self.svc(name)["depends_on"]).iter().any(|d| d == on)
    }

    fn env(&self, name: &str) -> BTreeMap<String, Option<String>> {
        let env = &self.svc(name)["environment"];
        if env.is_sequence() {
            let pairs = texts(env).into_iter().map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (kv, None),
            });
            return pairs.collect();
        }
        scalars(env)
    }

    /// The service sees the repository's `rel` at the image's path: the
    /// image holds it, and a bind mount (if any) is the repository's file.
    fn mounted(&mut self, name: &str, rel: &str) {
        self.image.holds(self.l, rel, &format!("{AT}: {name}"));
        let seen = format!("{IMAGE_ROOT}/{rel}");
        for (source, target) in items(&self.svc(name)["volumes"]).iter().map(volume) {
            if seen != target && !seen.starts_with(&format!("{target}/")) {
                continue;
            }
            let want = target.strip_prefix(&format!("{IMAGE_ROOT}/"));
            let source_rel = source.strip_prefix("./").unwrap_or(&source);
            let theirs =
                want.is_some_and(|w| source_rel == w || Path::new(&source) == self.l.path(w));
            if !theirs {
                self.l.fail(
                    AT,
                    format!("{name} mounts {source} at {target}: it reads {rel} from there, not the repository's"),
                );
            }
        }
    }

    /// `url` is the Redis `service` (redis://SERVICE:6379), which `name`
    /// depends on.
    fn redis(&mut self, url: Option<&str>, name: &str, service: &str) {
        let at = host_port(url.unwrap_or_default(), &["redis"], 6379);
        if at != Some((service.to_string(), 6379)) {
            let apart = if service == "coordinator" {
                ": the limiter's Redis and the run's are apart"
            } else {
                ""
            };
            self.l.fail(
                AT,
                format!(
                    "{name}: {url:?} is not the {service} service (redis://{service}:6379){apart}"
                ),
            );
        } else if !self.depends(name, service) {
            self.l
                .fail(AT, format!("{name} does not depend on {service}"));
        }
    }

    /// The coordinator only on networks of its own, internal, that only
    /// the agents and the controller join besides it.
    fn coordination(&mut self, networks: &Value) {
        let on = |s: &Value| -> Vec<String> {
            match &s["networks"] {
                Value::Sequence(_) => texts(&s["networks"]),
                Value::Mapping(m) => m.keys().filter_map(text).collect(),
                _ => vec!["default".to_string()],
            }
        };
        let mine = on(self.svc("coordinator"));
        let mut names: Vec<String> = self
            .services
            .as_mapping()
            .map_or_else(Vec::new, |m| m.keys().filter_map(text).collect());
        names.retain(|n| n != "coordinator");
        for net in &mine {
            let internal = networks[net.as_str()]["internal"].as_bool() == Some(true);
            let others: Vec<&String> = names
                .iter()
                .filter(|n| on(self.svc(n)).contains(net))
                .filter(|n| *n != "agent" && *n != "controller")
                .collect();
            if net == "default" || !internal || !others.is_empty() {
                self.l.fail(AT, format!("coordinator: network {net:?} is not one of its own (internal, only the agents and the controller beside it; also on it: {others:?})"));
            }
        }
    }

    /// Redis is Redis; every rlbench service runs the controller's image,
    /// built from deploy/Dockerfile.
    fn images(&mut self) {
        for name in ["redis", "coordinator"] {
            let image = text(&self.svc(name)["image"]);
            if !image.as_deref().is_some_and(|i| i.starts_with("redis:")) {
                self.l
                    .fail(AT, format!("{name}: image {image:?} is not Redis"));
            }
        }
        let rlbench = text(&self.svc("controller")["image"]);
        for name in ["r0", "r1", "r2", "agent", "controller"] {
            let image = text(&self.svc(name)["image"]);
            if image != rlbench || rlbench.is_none() {
                self.l.fail(
                    AT,
                    format!("{name}: image {image:?}, not the controller's {rlbench:?}"),
                );
            }
            let build = &self.svc(name)["build"];
            let dockerfile = text(&build["dockerfile"]).unwrap_or_default();
            if !build.is_null() && Path::new(&dockerfile) != Path::new("deploy/Dockerfile") {
                self.l.fail(
                    AT,
                    format!("{name}: built from {dockerfile}, not deploy/Dockerfile"),
                );
            }
        }
    }

    /// The replicas: the reference API in a mode of its own vocabulary, on
    /// the limiter's Redis, each named for its service, with the
    /// repository's config. Their ports by name.
    fn replicas(&mut self) -> BTreeMap<String, String> {
        let mut ports = BTreeMap::new();
        for name in REPLICAS {
            let at = format!("{AT}: {name}");
            let entrypoint = texts(&self.svc(name)["entrypoint"]);
            if entrypoint != ["reference-api"] {
                self.l.fail(
                    AT,
                    format!("{name}: entrypoint {entrypoint:?}, not [reference-api]"),
                );
            }
            let env = self.env(name);
            let mode = env.get("RLBENCH_MODE").cloned().flatten();
            match mode.as_deref() {
                Some(m) if mode_named(m).is_some() && m != DEFAULT_MODE => self.l.fail(
                    AT,
                    format!("{name}: RLBENCH_MODE is {m:?} when unset, not {DEFAULT_MODE}"),
                ),
                Some(m) if mode_named(m).is_some() => {}
                _ => self.l.fail(
                    AT,
                    format!(
                        "{name}: RLBENCH_MODE {mode:?} is not one of {}",
                        mode_list()
                    ),
                ),
            }
            let url = env.get("RLBENCH_REDIS_URL").cloned().flatten();
            self.redis(url.as_deref(), name, "redis");
            let cmd = texts(&self.svc(name)["command"]);
            let given = self.l.flag(&cmd, "--name", &at);
            if given.as_deref().is_some_and(|g| g != name) {
                self.l
                    .fail(AT, format!("{name}: --name {given:?}, not {name}"));
            }
            let listen = self.l.flag(&cmd, "--listen", &at).unwrap_or_default();
            let port = listen.rsplit(':').next().unwrap_or_default();
            ports.insert(name.to_string(), port.to_string());
            if let Some(config) = self.l.flag(&cmd, "--config", &at) {
                self.mounted(name, &config);
            }
        }
        ports
    }

    /// nginx balances over exactly the replicas, on their ports, from the
    /// config mounted into it; the port it listens on.
    fn nginx(&mut self, ports: &BTreeMap<String, String>) -> Option<u16> {
        let confs: Vec<(String, String)> = (items(&self.svc("nginx")["volumes"]).iter())
            .map(volume)
            .filter(|(_, target)| target.starts_with("/etc/nginx/"))
            .collect();
        let [(source, _)] = confs.as_slice() else {
            self.l
                .fail(AT, "nginx: not one config mounted under /etc/nginx/");
            return None;
        };
        let rel = source.strip_prefix("./").unwrap_or(source);
        let conf = std::fs::read_to_string(self.l.path(rel)).unwrap_or_else(|e| {
            self.l.fail(AT, format!("nginx: {rel}: {e}"));
            String::new()
        });
        let mut servers = upstream_servers(&conf);
        servers.sort();
        let want: Vec<String> = ports.iter().map(|(r, p)| format!("{r}:{p}")).collect();
        if servers != want {
            self.l.fail(
                rel,
                format!("the upstream is {servers:?}, not the replicas {want:?}"),
            );
        }
        for r in REPLICAS {
            if !self.depends("nginx", r) {
                self.l.fail(AT, format!("nginx does not depend on {r}"));
            }
        }
        conf.lines().find_map(|line| {
            let port = line
                .trim()
                .strip_prefix("listen")?
                .trim()
                .strip_suffix(';')?;
            port.trim().parse().ok()
        })
    }

    /// The agents: scalable, on the coordinator, allowed to send off their
    /// loopback. Their command line, coordinator and count.
    fn agent(&mut self) -> (Vec<String>, Option<String>, Option<String>) {
        let agent = self.svc("agent");
        if !agent["container_name"].is_null() {
            self.l.fail(
                AT,
                "agent has a container_name: it cannot be scaled (--scale agent=3)",
            );
        }
        if !items(&agent["ports"]).is_empty() {
            self.l
                .fail(AT, "agent publishes ports: scaled, they would clash");
        }
        let cmd = texts(&agent["command"]);
        let replicas = text(&agent["deploy"]["replicas"]);
        if cmd.first().map(String::as_str) != Some("agent") {
            self.l
                .fail(AT, format!("agent: command {cmd:?} is not rlbench agent …"));
        }
        let coordinator = self.l.flag(&cmd, "--coordinator", &format!("{AT}: agent"));
        self.redis(coordinator.as_deref(), "agent", "coordinator");
        if !cmd.iter().any(|a| a == "--allow-remote-targets") {
            self.l.fail(AT, "agent: no --allow-remote-targets: the scenario's target (nginx) is not the agent's loopback, and only its command line may allow that");
        }
        if replicas.is_none() {
            self.l.fail(AT, "agent: no deploy.replicas (the agents a plain `up` starts: the controller's --agents)");
        }
        (cmd, coordinator, replicas)
    }

    /// The controller: runs a scenario the image holds against nginx,
    /// waits for the agents started, on their coordinator, with their
    /// token, and keeps its run folders on a volume. Its command line.
    fn controller(
        &mut self,
        nginx_port: Option<u16>,
        coordinator: &Option<String>,
        replicas: Option<String>,
    ) -> Vec<String> {
        let at = format!("{AT}: controller");
        let cmd = texts(&self.svc("controller")["command"]);
        match cmd.as_slice() {
            [run, scenario_file, ..] if run == "run" => {
                self.mounted("controller", scenario_file);
                scenario(
                    self.l,
                    scenario_file,
                    &[("nginx", nginx_port)],
                    "the nginx service",
                );
            }
            _ => self.l.fail(
                AT,
                format!("controller: command {cmd:?} is not rlbench run SCENARIO …"),
            ),
        }
        let agents = self.l.flag(&cmd, "--agents", &at);
        if let (Some(agents), Some(replicas)) = (&agents, &replicas) {
            if agents != replicas {
                self.l.fail(AT, format!("controller waits for --agents {agents}, the agent service starts {replicas}"));
            }
        }
        let mine = self.l.flag(&cmd, "--coordinator", &at);
        if mine != *coordinator {
            self.l.fail(
                AT,
                format!("controller's --coordinator {mine:?} is not the agents' {coordinator:?}"),
            );
        }
        let token = |name| {
            self.env(name)
                .get("RLBENCH_COORDINATOR_TOKEN")
                .cloned()
                .flatten()
        };
        let tokens = (token("agent"), token("controller"));
        if tokens.0.is_none() || tokens.0 != tokens.1 {
            self.l.fail(AT, format!("the agents and the controller must share RLBENCH_COORDINATOR_TOKEN: {tokens:?}"));
        }
        self.redis(mine.as_deref(), "controller", "coordinator");
        for dep in ["nginx", "agent"] {
            if !self.depends("controller", dep) {
                self.l
                    .fail(AT, format!("controller does not depend on {dep}"));
            }
        }
        let volumes = items(&self.svc("controller")["volumes"]);
        if !volumes
            .iter()
            .map(volume)
            .any(|(_, target)| target == REPORTS)
        {
            self.l.fail(
                AT,
                format!("controller: no volume at {REPORTS} (its run folders)"),
            );
        }
        cmd
    }
}

/// The `server` lines of nginx.conf's `upstream` block.
fn upstream_servers(conf: &str) -> Vec<String> {
    let Some(start) = conf.find("upstream") else {
        return Vec::new();
    };
    let block = &conf[start..];
    let (Some(open), Some(close)) = (block.find('{'), block.find('}')) else {
        return Vec::new();
    };
    (block[open + 1..close].lines())
        .filter_map(|line| line.trim().strip_prefix("server")?.trim().strip_suffix(';'))
        .map(|s| s.trim().to_string())
        .collect()
}
