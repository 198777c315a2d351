#!/usr/bin/env python3
"""What no schema knows about the deployment files: that they agree.

    check.py ROOT COMPOSE_CONFIG RLBENCH

ROOT is the repository (or a copy of its deployment files: the self-test
of scripts/deploy-check.sh breaks copies), COMPOSE_CONFIG the output of
`docker-compose config` for ROOT/docker-compose.yml, RLBENCH a built
rlbench. docker-compose and kubernetes-validate check each file's shape;
this checks what ties them together — the agent count the controller waits
for is the count started, every Redis URL names a service on its port, the
controller's scenario targets the load balancer on its port with the
replicas' own policy, the agents' Job is Indexed with the command a Job's
pod needs, every file a command names is in the image. One line per
failure on stderr, exit 1; exit 0 and one line when all hold.
Standard library and PyYAML only (target/deploy-check/pylib has it).
"""

import json
import pathlib
import re
import subprocess
import sys
import tomllib
import urllib.parse

import yaml

MODES = ("local", "redis_naive", "redis_lua", "redis_batched")
# The replicas' mode when RLBENCH_MODE is not set.
DEFAULT_MODE = "redis_lua"
COMPOSE_SERVICES = {"redis", "coordinator", "r0", "r1", "r2", "nginx", "agent", "controller"}
KUBERNETES = {
    ("Deployment", "redis"),
    ("Service", "redis"),
    ("Deployment", "coordinator"),
    ("Service", "coordinator"),
    ("PersistentVolumeClaim", "rlbench-reports"),
    ("Deployment", "reference-api"),
    ("Service", "reference-api"),
    ("Job", "rlbench-agents"),
    ("Job", "rlbench-controller"),
}
# Where the image holds the repository's paths (deploy/Dockerfile's WORKDIR).
IMAGE_ROOT = "/rlbench"
REPORTS = IMAGE_ROOT + "/reports"

failures = []


def fail(where, what):
    failures.append(f"{where}: {what}")


def flag(args, name, where):
    """The value after `name` in a command line, or None (a failure)."""
    args = [str(a) for a in args or []]
    if name in args and args.index(name) + 1 < len(args):
        return args[args.index(name) + 1]
    fail(where, f"no {name} VALUE in {args}")
    return None


def host_port(url, schemes, default_port):
    u = urllib.parse.urlsplit(url or "")
    if u.scheme not in schemes or not u.hostname:
        return None
    try:
        return u.hostname, u.port or default_port
    except ValueError:
        return None


def duration_us(text):
    m = re.fullmatch(r"(\d+)(us|ms|s|m|h)", str(text))
    if not m:
        return None
    return int(m[1]) * {"us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}[m[2]]


class Image:
    """What deploy/Dockerfile puts in the image: its working folder, the
    repository paths it copies there, its entry point."""

    def __init__(self, root):
        self.path = root / "deploy/Dockerfile"
        self.where = "deploy/Dockerfile"
        text = self.path.read_text() if self.path.is_file() else ""
        if not text:
            fail(self.where, "missing")
        # The last stage: what runs.
        stage = re.split(r"(?im)^FROM\s", text)[-1]
        self.workdir = None
        self.copied = []
        self.binaries = set()
        self.entrypoint = None
        for line in stage.splitlines():
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            op = words[0].upper()
            if op == "WORKDIR":
                self.workdir = words[1]
            elif op == "COPY" and any(w.startswith("--from") for w in words[1:]):
                srcs = [w for w in words[1:-1] if not w.startswith("--")]
                self.binaries |= {pathlib.PurePosixPath(s).name for s in srcs}
            elif op == "COPY" and len(words) == 3:
                if words[1] == words[2]:
                    self.copied.append(words[1].rstrip("/"))
                else:
                    fail(self.where, f"{line.strip()!r}: the image keeps the repository's paths (COPY P P)")
            elif op == "ENTRYPOINT":
                self.entrypoint = json.loads(line.split(None, 1)[1])
        if self.workdir != IMAGE_ROOT:
            fail(self.where, f"WORKDIR is {self.workdir}, not {IMAGE_ROOT} (the commands' relative paths)")
        if self.entrypoint != ["rlbench"]:
            fail(self.where, f'ENTRYPOINT is {self.entrypoint}, not ["rlbench"] (the agents\' and controller\'s args)')
        for binary in ("rlbench", "reference-api"):
            if binary not in self.binaries:
                fail(self.where, f"{binary} is not copied from the build stage")

    def holds(self, rel, where):
        """`rel`, a path relative to the working folder, is in the repository
        and copied into the image."""
        if not (ROOT / rel).is_file():
            fail(where, f"{rel}: no such file in the repository")
        elif not any(rel == c or rel.startswith(c + "/") for c in self.copied):
            fail(where, f"{rel} is not copied into the image ({self.where})")


def replica_policy():
    where = "reference-api/docker/replica.json"
    try:
        config = json.loads((ROOT / where).read_text())
    except (OSError, ValueError) as e:
        fail(where, str(e))
        return {}, "X-Customer-Id"
    return config.get("policy", {}), config.get("key_header", "X-Customer-Id")


def scenario(rel, services, where):
    """The controller's scenario: an external target, allowed off loopback,
    whose URLs are `services` (host -> port) and whose policy and key header
    are the replicas'."""
    try:
        s = tomllib.loads((ROOT / rel).read_text())
    except (OSError, ValueError) as e:
        fail(rel, str(e))
        return
    t = s.get("target", {})
    if t.get("kind") != "external":
        fail(rel, f'[target] kind is {t.get("kind")!r}, not "external" (the stack runs the replicas)')
    if t.get("allow_remote") is not True:
        fail(rel, "[target] allow_remote is not true: the stack is off the controller's loopback")
    if t.get("path") != "/api/transfers":
        fail(rel, f'[target] path is {t.get("path")!r}, not the reference API\'s "/api/transfers"')
    urls = t.get("urls") or []
    if not urls:
        fail(rel, "[target] urls is empty")
    for url in urls:
        hp = host_port(url, ("http",), 80)
        if hp is None or hp[0] not in services:
            fail(rel, f"{url}: not http:// to one of {sorted(services)} ({where})")
        elif hp[1] != services[hp[0]]:
            fail(rel, f"{url}: {hp[0]} listens on {services[hp[0]]} ({where})")
    policy, key_header = replica_policy()
    if t.get("key_header") != key_header:
        fail(rel, f'[target] key_header {t.get("key_header")!r} is not the replicas\' {key_header!r}')
    mine = s.get("policy", {})
    for k, v in mine.items():
        if k in policy:
            same = policy[k] == v
        elif k + "_us" in policy:
            same = policy[k + "_us"] == duration_us(v)
        else:
            same = False
        if not same:
            fail(rel, f"[policy] {k} = {v!r} is not the replicas' (reference-api/docker/replica.json: {policy})")
    for k in policy:
        if k not in mine and k.removesuffix("_us") not in mine:
            fail(rel, f"[policy] has no {k.removesuffix('_us')}, which the replicas' has ({policy})")


def check_compose(config_path, image):
    where = "docker-compose.yml"
    config = yaml.safe_load(pathlib.Path(config_path).read_text()) or {}
    services = config.get("services") or {}
    if set(services) != COMPOSE_SERVICES:
        fail(where, f"services are {sorted(services)}, not {sorted(COMPOSE_SERVICES)}")

    def svc(name):
        return services.get(name) or {}

    def mounted(name, rel):
        """The service sees the repository's `rel` at the image's path: the
        image holds it, and a bind mount (if any) is the repository's file."""
        image.holds(rel, f"{where}: {name}")
        seen = f"{IMAGE_ROOT}/{rel}"
        for v in svc(name).get("volumes") or []:
            v = v if isinstance(v, dict) else dict(zip(("source", "target"), str(v).split(":")))
            target = str(v.get("target", ""))
            if seen == target or seen.startswith(target + "/"):
                want = ROOT / target.removeprefix(IMAGE_ROOT).lstrip("/")
                if not target.startswith(IMAGE_ROOT + "/") or v.get("source") != str(want):
                    fail(where, f"{name} mounts {v.get('source')} at {target}: it reads {rel} from there, not the repository's")

    def redis(url, name):
        hp = host_port(url, ("redis",), 6379)
        if hp != ("redis", 6379):
            fail(where, f"{name}: {url!r} is not the redis service (redis://redis:6379)")
        elif "redis" not in (svc(name).get("depends_on") or {}):
            fail(where, f"{name} does not depend on redis")
        return url

    def coordinator(url, name):
        hp = host_port(url, ("redis",), 6379)
        if hp != ("coordinator", 6379):
            fail(where, f"{name}: {url!r} is not the coordinator service (redis://coordinator:6379): the limiter's Redis and the run's are apart")
        elif "coordinator" not in (svc(name).get("depends_on") or {}):
            fail(where, f"{name} does not depend on coordinator")
        return url

    for name in ("redis", "coordinator"):
        if not str(svc(name).get("image", "")).startswith("redis:"):
            fail(where, f"{name}: image {svc(name).get('image')!r} is not Redis")

    rlbench_image = svc("controller").get("image")
    for name in ("r0", "r1", "r2", "agent", "controller"):
        s = svc(name)
        if s.get("image") != rlbench_image or not rlbench_image:
            fail(where, f"{name}: image {s.get('image')!r}, not the controller's {rlbench_image!r}")
        build = s.get("build") or {}
        if build and pathlib.PurePosixPath(str(build.get("dockerfile"))) != pathlib.PurePosixPath("deploy/Dockerfile"):
            fail(where, f"{name}: built from {build.get('dockerfile')}, not deploy/Dockerfile")

    replica_port = {}
    for name in ("r0", "r1", "r2"):
        s = svc(name)
        if s.get("entrypoint") != ["reference-api"]:
            fail(where, f"{name}: entrypoint {s.get('entrypoint')}, not [reference-api]")
        env = s.get("environment") or {}
        if env.get("RLBENCH_MODE") not in MODES:
            fail(where, f"{name}: RLBENCH_MODE {env.get('RLBENCH_MODE')!r} is not one of {', '.join(MODES)}")
        elif env.get("RLBENCH_MODE") != DEFAULT_MODE:
            fail(where, f"{name}: RLBENCH_MODE is {env.get('RLBENCH_MODE')!r} when unset, not {DEFAULT_MODE}")
        redis(env.get("RLBENCH_REDIS_URL"), name)
        cmd = s.get("command") or []
        given = flag(cmd, "--name", f"{where}: {name}")
        if given not in (name, None):
            fail(where, f"{name}: --name {given}, not {name}")
        listen = flag(cmd, "--listen", f"{where}: {name}") or ""
        replica_port[name] = listen.rpartition(":")[2]
        config = flag(cmd, "--config", f"{where}: {name}")
        if config:
            mounted(name, config)

    conf_mount = [
        v for v in svc("nginx").get("volumes") or []
        if isinstance(v, dict) and str(v.get("target", "")).startswith("/etc/nginx/")
        or isinstance(v, str) and ":/etc/nginx/" in v
    ]
    nginx_port = None
    if len(conf_mount) != 1:
        fail(where, "nginx: not one config mounted under /etc/nginx/")
    else:
        v = conf_mount[0]
        source = v["source"] if isinstance(v, dict) else v.split(":")[0]
        try:
            conf = pathlib.Path(source).read_text()
        except OSError as e:
            conf = ""
            fail(where, f"nginx: {e}")
        upstream = re.search(r"upstream\s+\S+\s*\{([^}]*)\}", conf)
        servers = re.findall(r"^\s*server\s+(\S+?);", upstream[1] if upstream else "", re.M)
        want = sorted(f"{r}:{p}" for r, p in replica_port.items())
        if sorted(servers) != want:
            fail(source, f"the upstream is {servers}, not the replicas {want}")
        listen = re.search(r"^\s*listen\s+(\d+)\s*;", conf, re.M)
        nginx_port = int(listen[1]) if listen else None
        for r in ("r0", "r1", "r2"):
            if r not in (svc("nginx").get("depends_on") or {}):
                fail(where, f"nginx does not depend on {r}")

    agent = svc("agent")
    if "container_name" in agent:
        fail(where, "agent has a container_name: it cannot be scaled (--scale agent=3)")
    if agent.get("ports"):
        fail(where, "agent publishes ports: scaled, they would clash")
    cmd = agent.get("command") or []
    if cmd[:1] != ["agent"]:
        fail(where, f"agent: command {cmd} is not rlbench agent …")
    coordinator_url = coordinator(flag(cmd, "--coordinator", f"{where}: agent"), "agent")
    if "--allow-remote-targets" not in cmd:
        fail(where, "agent: no --allow-remote-targets: the scenario's target (nginx) is not the agent's loopback, and only its command line may allow that")
    replicas = (agent.get("deploy") or {}).get("replicas")
    if replicas is None:
        fail(where, "agent: no deploy.replicas (the agents a plain `up` starts: the controller's --agents)")

    ctl = svc("controller")
    cmd = [str(a) for a in ctl.get("command") or []]
    if cmd[:1] != ["run"] or len(cmd) < 2:
        fail(where, f"controller: command {cmd} is not rlbench run SCENARIO …")
    else:
        mounted("controller", cmd[1])
        scenario(cmd[1], {"nginx": nginx_port}, "the nginx service")
    agents = flag(cmd, "--agents", f"{where}: controller")
    if agents is not None and replicas is not None and str(agents) != str(replicas):
        fail(where, f"controller waits for --agents {agents}, the agent service starts {replicas}")
    mine = flag(cmd, "--coordinator", f"{where}: controller")
    if mine != coordinator_url:
        fail(where, f"controller's --coordinator {mine!r} is not the agents' {coordinator_url!r}")
    tokens = {n: (svc(n).get("environment") or {}).get("RLBENCH_COORDINATOR_TOKEN") for n in ("agent", "controller")}
    if not tokens["agent"] or tokens["agent"] != tokens["controller"]:
        fail(where, f"the agents and the controller must share RLBENCH_COORDINATOR_TOKEN: {tokens}")
    coordinator(mine, "controller")
    for dep in ("nginx", "agent"):
        if dep not in (ctl.get("depends_on") or {}):
            fail(where, f"controller does not depend on {dep}")
    targets = [v.get("target") if isinstance(v, dict) else str(v).split(":")[1] for v in ctl.get("volumes") or []]
    if REPORTS not in targets:
        fail(where, f"controller: no volume at {REPORTS} (its run folders)")
    return cmd, agent.get("command") or []


def check_kubernetes(image):
    folder = ROOT / "deploy/kubernetes"
    objects = {}
    for path in sorted(folder.glob("*.yaml")):
        rel = str(path.relative_to(ROOT))
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except yaml.YAMLError as e:
            fail(rel, str(e).replace("\n", " "))
            continue
        for d in docs:
            key = (d.get("kind"), (d.get("metadata") or {}).get("name"))
            if key in objects:
                fail(rel, f"{key[0]}/{key[1]} twice")
            objects[key] = (rel, d)
    if set(objects) != KUBERNETES:
        fail("deploy/kubernetes", f"objects are {sorted(objects)}, not {sorted(KUBERNETES)}")

    def obj(kind, name):
        return objects.get((kind, name), (f"deploy/kubernetes ({kind}/{name})", {}))

    def pod(kind, name):
        rel, d = obj(kind, name)
        spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
        containers = spec.get("containers") or [{}]
        if len(containers) != 1:
            fail(rel, f"{kind}/{name}: {len(containers)} containers, not 1")
        return rel, d, spec, containers[0]

    def env(container):
        return {e.get("name"): e for e in container.get("env") or []}

    # Services: each selects one Deployment's pods, on a port they open.
    service_port = {}
    for (kind, name), (rel, d) in objects.items():
        if kind != "Service":
            continue
        spec = d.get("spec") or {}
        selector = spec.get("selector") or {}
        backends = [
            k for k, (_, o) in objects.items()
            if k[0] == "Deployment"
            and selector
            and selector.items() <= ((((o.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}).items()
        ]
        if len(backends) != 1:
            fail(rel, f"Service/{name} selects {backends or 'nothing'}, not one Deployment")
            continue
        _, _, _, c = pod(*backends[0])
        opened = {p.get("name") for p in c.get("ports") or []} | {p.get("containerPort") for p in c.get("ports") or []}
        ports = spec.get("ports") or []
        for p in ports:
            if p.get("targetPort", p.get("port")) not in opened:
                fail(rel, f"Service/{name}: targetPort {p.get('targetPort')} is not a port of {backends[0][1]}")
        if len(ports) == 1:
            service_port[name] = ports[0].get("port")

    def redis(url, rel, what, service="redis"):
        hp = host_port(url, ("redis",), 6379)
        if hp is None or hp[0] not in service_port or hp[1] != service_port[hp[0]]:
            fail(rel, f"{what}: {url!r} is not a Service on its port ({service_port})")
        elif hp[0] != service:
            fail(rel, f"{what}: {url!r} is not the {service} Service")

    for name in ("redis", "coordinator"):
        rel, d, _, c = pod("Deployment", name)
        if not str(c.get("image", "")).startswith("redis:"):
            fail(rel, f"{name}: image {c.get('image')!r} is not Redis")

    # The restricted Pod Security Standard for every pod, and requests.
    for (kind, name), (rel, d) in objects.items():
        if kind in ("Deployment", "Job"):
            restricted(rel, f"{kind}/{name}", ((d.get("spec") or {}).get("template") or {}).get("spec") or {})
        if kind == "Job" and not isinstance((d.get("spec") or {}).get("ttlSecondsAfterFinished"), int):
            fail(rel, f"Job/{name}: no ttlSecondsAfterFinished (finished Jobs would stay forever)")

    rel, d, spec, c = pod("Deployment", "reference-api")
    rlbench_image = c.get("image")
    if (d.get("spec") or {}).get("replicas") != 3:
        fail(rel, f"reference-api: {(d.get('spec') or {}).get('replicas')} replicas, not 3")
    if c.get("command") != ["reference-api"]:
        fail(rel, f"reference-api: command {c.get('command')}, not [reference-api]")
    e = env(c)
    mode = (e.get("RLBENCH_MODE") or {}).get("value")
    if mode not in MODES:
        fail(rel, f"reference-api: RLBENCH_MODE {mode!r} is not one of {', '.join(MODES)}")
    elif mode != DEFAULT_MODE:
        fail(rel, f"reference-api: RLBENCH_MODE is {mode!r}, not the default {DEFAULT_MODE}")
    redis((e.get("RLBENCH_REDIS_URL") or {}).get("value"), rel, "reference-api RLBENCH_REDIS_URL")
    args = c.get("args") or []
    config = flag(args, "--config", rel)
    if config:
        image.holds(config, rel)
    for ref in re.findall(r"\$\((\w+)\)", " ".join(map(str, args))):
        if ref not in e:
            fail(rel, f"reference-api: $({ref}) in args is not in env")
    listen = (flag(args, "--listen", rel) or "").rpartition(":")[2]
    if listen not in {str(p.get("containerPort")) for p in c.get("ports") or []}:
        fail(rel, f"reference-api listens on {listen}, not a port it declares")

    # The controller.
    crel, cd, cspec, cc = pod("Job", "rlbench-controller")
    cargs = [str(a) for a in cc.get("args") or []]
    cjob = cd.get("spec") or {}
    if cc.get("command") not in (None, ["rlbench"]):
        fail(crel, f"controller: command {cc.get('command')}: rlbench is the image's entry point")
    if cargs[:1] != ["run"] or len(cargs) < 2:
        fail(crel, f"controller: args {cargs} are not run SCENARIO …")
    else:
        image.holds(cargs[1], crel)
        scenario(cargs[1], {"reference-api": service_port.get("reference-api")}, "the reference-api Service")
    if cjob.get("backoffLimit") != 0:
        fail(crel, f"controller: backoffLimit {cjob.get('backoffLimit')}, not 0 (a retry sends the load again, and a failed gate is the answer)")
    if cspec.get("restartPolicy") != "Never":
        fail(crel, f"controller: restartPolicy {cspec.get('restartPolicy')}, not Never")
    if cjob.get("completionMode", "NonIndexed") != "NonIndexed" or cjob.get("completions", 1) != 1 or cjob.get("parallelism", 1) != 1:
        fail(crel, "controller: one pod, once (no completionMode, completions or parallelism above 1)")
    agents = flag(cargs, "--agents", crel)
    coordinator = flag(cargs, "--coordinator", crel)
    redis(coordinator, crel, "controller --coordinator", "coordinator")
    mounts = {m.get("mountPath"): m.get("name") for m in cc.get("volumeMounts") or []}
    volumes = {v.get("name"): v for v in cspec.get("volumes") or []}
    claim = ((volumes.get(mounts.get(REPORTS)) or {}).get("persistentVolumeClaim") or {}).get("claimName")
    if ("PersistentVolumeClaim", claim) not in objects:
        fail(crel, f"controller: {REPORTS} is not on a PersistentVolumeClaim of these files (its run folders would go with the pod): {volumes.get(mounts.get(REPORTS))}")

    # The agents.
    rel, d, spec, c = pod("Job", "rlbench-agents")
    job = d.get("spec") or {}
    e = env(c)
    count = (e.get("RLBENCH_AGENTS") or {}).get("value")
    if job.get("completionMode") != "Indexed":
        fail(rel, f"agents: completionMode {job.get('completionMode')!r}, not Indexed (each pod's JOB_COMPLETION_INDEX is its segment)")
    counts = {
        "completions": job.get("completions"),
        "parallelism": job.get("parallelism"),
        "RLBENCH_AGENTS": count,
        f"the controller's --agents ({crel})": agents,
    }
    if len({str(v) for v in counts.values()}) != 1 or not str(count).isdigit() or int(count) < 1:
        fail(rel, f"agents: the counts differ (all must be one number): {counts}")
    if spec.get("restartPolicy") not in ("Never", "OnFailure"):
        fail(rel, f"agents: restartPolicy {spec.get('restartPolicy')!r}: a Job's pods take Never or OnFailure")
    if not isinstance(job.get("backoffLimit"), int) or job.get("backoffLimit") < 0:
        fail(rel, f"agents: backoffLimit {job.get('backoffLimit')!r} is not a count")
    if c.get("command") not in (None, ["rlbench"]):
        fail(rel, f"agents: command {c.get('command')}: rlbench is the image's entry point")
    args = [str(a) for a in c.get("args") or []]
    if args[:2] != ["agent", "--once"]:
        fail(rel, f"agents: args {c.get('args')}, not [agent, --once, …] (a Job's pod exits after its run)")
    if "--allow-remote-targets" not in args:
        fail(rel, "agents: no --allow-remote-targets: the scenario's target (a Service) is not the pod's loopback, and only the agent's command line may allow that")
    if "--idle-timeout" not in args:
        fail(rel, "agents: no --idle-timeout: agents whose controller never came would wait out the Job's deadline")
    if not spec.get("topologySpreadConstraints"):
        fail(rel, "agents: no topologySpreadConstraints: load machines sharing a node share its CPU")
    url = (e.get("RLBENCH_COORDINATOR") or {}).get("value")
    redis(url, rel, "agents RLBENCH_COORDINATOR", "coordinator")
    secret = lambda container: (((env(container).get("RLBENCH_COORDINATOR_TOKEN") or {}).get("valueFrom") or {}).get("secretKeyRef"))
    if not secret(c) or secret(c) != secret(cc):
        fail(rel, f"agents and controller must take RLBENCH_COORDINATOR_TOKEN from one Secret: {secret(c)} vs {secret(cc)}")
    if url != coordinator:
        fail(rel, f"agents: RLBENCH_COORDINATOR {url!r} is not the controller's --coordinator {coordinator!r}")
    for other in (c, cc):
        if other.get("image") != rlbench_image or not rlbench_image:
            fail(rel, f"image {other.get('image')!r} is not the replicas' {rlbench_image!r} (one image: deploy/Dockerfile)")
    return cargs, args


def restricted(rel, what, spec):
    """The restricted Pod Security Standard's fields, every container
    (init too) with resource requests."""
    pod = spec.get("securityContext") or {}
    if pod.get("runAsNonRoot") is not True:
        fail(rel, f"{what}: the pod does not set runAsNonRoot: true (restricted Pod Security Standard)")
    if pod.get("runAsUser") == 0:
        fail(rel, f"{what}: runAsUser 0 (restricted Pod Security Standard)")
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type")
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        name = c.get("name")
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            fail(rel, f"{what}: container {name} does not set allowPrivilegeEscalation: false (restricted Pod Security Standard)")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            fail(rel, f"{what}: container {name} does not drop ALL capabilities (restricted Pod Security Standard)")
        if sc.get("privileged"):
            fail(rel, f"{what}: container {name} is privileged")
        if (sc.get("seccompProfile") or {}).get("type", pod_seccomp) not in ("RuntimeDefault", "Localhost"):
            fail(rel, f"{what}: container {name} has no seccompProfile RuntimeDefault (restricted Pod Security Standard)")
        if not ((c.get("resources") or {}).get("requests")):
            fail(rel, f"{what}: container {name} requests no resources")
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            fail(rel, f"{what}: a hostPath volume (restricted Pod Security Standard)")


def check_command_line(rlbench, commands):
    """Every subcommand and flag the files give rlbench is one its --help
    lists: a renamed flag fails here, not on a user's cluster."""
    def help_of(sub):
        r = subprocess.run([rlbench, sub, "--help"], capture_output=True, text=True)
        return r.returncode, r.stdout
    for where, cmd in commands:
        rc, text = help_of(cmd[0])
        if rc != 0:
            fail(where, f"rlbench {cmd[0]} --help exits {rc}")
            continue
        for a in cmd[1:]:
            if str(a).startswith("--") and not re.search(rf"(^|[\s,]){re.escape(str(a))}(?=[\s,=<\[]|$)", text, re.M):
                fail(where, f"rlbench {cmd[0]} has no {a} (rlbench {cmd[0]} --help)")


def main():
    global ROOT
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ROOT = pathlib.Path(sys.argv[1]).resolve()
    image = Image(ROOT)
    commands = []
    try:
        controller, agent = check_compose(sys.argv[2], image)
        commands += [("docker-compose.yml: controller", controller), ("docker-compose.yml: agent", agent)]
    except (OSError, yaml.YAMLError, AttributeError, TypeError) as e:
        fail("docker-compose.yml", f"cannot read its config: {e}")
    try:
        controller, agent = check_kubernetes(image)
        commands += [("deploy/kubernetes/controller.yaml", controller), ("deploy/kubernetes/agents.yaml", agent)]
    except (AttributeError, TypeError) as e:
        fail("deploy/kubernetes", f"not the objects expected: {e}")
    check_command_line(sys.argv[3], [(w, c) for w, c in commands if c])
    for f in failures:
        print(f"deploy-check: {f}", file=sys.stderr)
    if failures:
        return 1
    print("cross-checks (scripts/deploy-check/check.py): ok — the files and their scenarios agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
