#!/usr/bin/env bash
# Validates what users deploy, on a machine with no Docker engine and no
# Kubernetes cluster: docker-compose.yml (the whole stack) and
# deploy/kubernetes/ (Redis, the replicas, the agents as an Indexed Job, the
# controller as a Job), with the controllers' scenarios. .ci/run calls it
# after `cargo build --release`. Four checks:
#   1. docker-compose config (Debian's docker-compose: the file's schema,
#      anchors and defaults) and config --services (the services by name);
#   2. kubernetes-validate --strict (PyPI; it ships the schemas, so it runs
#      offline) against Kubernetes 1.25 and 1.37: an unknown or misspelt
#      field, a wrong type fails;
#   3. scripts/deploy-check/check.py: what ties the files together and no
#      schema knows (agent counts, Redis URLs and ports, the scenario's
#      target and policy, the paths in the image, Job settings, flags);
#   4. rlbench check on each scenario of deploy/scenarios/.
# Then it breaks copies of the files, one mistake each, and fails unless
# every broken copy is refused: a check that cannot fail is no check.
#
# Installs what it needs when it is missing — docker-compose through
# apt-get (without the Docker engine it recommends: config needs none; dnf
# or brew through scripts/lib/need.sh), python3 with pip, and
# kubernetes-validate at the versions of scripts/deploy-check/requirements.txt
# into target/deploy-check/pylib — and skips, in one line each, what is
# there. RLBENCH_INSTALL=no: never install; say the fix and stop (exit 3).
# Needs a built rlbench (cargo build --release). Exit 0 all held, 1 a check
# failed (one line each), 3 something missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/need.sh
# check.py leaves no __pycache__ in the repository.
export PYTHONDONTWRITEBYTECODE=1

rlbench=$PWD/target/release/rlbench
if [ ! -x "$rlbench" ]; then
  echo "deploy-check: build rlbench first: cargo build --release" >&2
  exit 3
fi

# docker-compose: on Debian without the engine apt would bring along.
sudo=$(need_sudo apt-get)
if ! command -v docker-compose >/dev/null 2>&1 && [ "$(need_manager)" = apt-get ] &&
  [ "${RLBENCH_INSTALL:-yes}" != no ] && [ "$sudo" != none ]; then
  echo "installing docker-compose with apt-get (without the Docker engine it recommends)"
  if [ -z "$need_apt_updated" ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    need_apt_updated=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker-compose >/dev/null || true
  if ! command -v docker-compose >/dev/null 2>&1; then
    echo "rlbench: docker-compose is still not on PATH after installing it: sudo apt-get install --no-install-recommends docker-compose" >&2
    need_failed=1
  fi
else
  need docker-compose docker-compose docker-compose docker-compose
fi
need python3 python3 python3 python3
if python3 -m pip --version >/dev/null 2>&1; then
  echo "skipped: pip is there"
else
  need pip3 python3-pip python3-pip python3
fi
need_done

pylib=target/deploy-check/pylib
requirements=scripts/deploy-check/requirements.txt
kv=$(sed -n 's/^kubernetes-validate==//p' "$requirements")
installed() {
  PYTHONPATH=$pylib python3 -c "import sys, yaml, kubernetes_validate, importlib.metadata as m
sys.exit(m.version('kubernetes-validate') != '$kv')" 2>/dev/null
}
if installed; then
  echo "skipped: kubernetes-validate $kv is there ($pylib)"
elif [ "${RLBENCH_INSTALL:-yes}" = no ]; then
  echo "rlbench: kubernetes-validate $kv not found in $pylib: python3 -m pip install --target $pylib -r $requirements" >&2
  exit 3
else
  echo "installing kubernetes-validate $kv with pip (into $pylib)"
  rm -rf "$pylib"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-input --target "$pylib" -r "$requirements"
  installed || { echo "rlbench: kubernetes-validate $kv does not import from $pylib after installing it" >&2; exit 3; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
services_wanted="agent controller coordinator nginx r0 r1 r2 redis"

# validate ROOT: the four checks on ROOT, the repository or a copy of its
# deployment files. Prints what failed; returns 1 at the first failing check.
validate() {
  local root=$1 config services
  config=$(mktemp -p "$work")
  # The defaults, not this shell's RLBENCH_MODE or a .env file of the user's.
  : >"$work/empty.env"
  # A token of the check's own: the file refuses to start without one.
  compose() { (cd "$root" && env -u RLBENCH_MODE RLBENCH_COORDINATOR_TOKEN=deploy-check-token-0123456789 docker-compose --env-file "$work/empty.env" -f docker-compose.yml "$@"); }
  compose config >"$config" || return 1
  services=$(compose config --services | sort | xargs)
  if [ "$services" != "$services_wanted" ]; then
    echo "deploy-check: docker-compose.yml: services are \"$services\", not \"$services_wanted\"" >&2
    return 1
  fi
  echo "docker-compose config: ok (services: $services)"
  # An unknown kind is only a warning (exit 0) here: check.py names every object.
  PYTHONPATH=$pylib python3 -m kubernetes_validate --strict --quiet -k 1.25.0 -k 1.37.0 \
    "$root"/deploy/kubernetes/*.yaml || return 1
  echo "kubernetes-validate --strict (1.25, 1.37): ok ($(cd "$root" && echo deploy/kubernetes/*.yaml))"
  PYTHONPATH=$pylib python3 scripts/deploy-check/check.py "$root" "$config" "$rlbench" || return 1
  for scenario in "$root"/deploy/scenarios/*.toml; do
    (cd "$root" && "$rlbench" check "${scenario#"$root"/}") || return 1
  done
}

echo "== validating docker-compose.yml, deploy/kubernetes/, deploy/scenarios/"
validate "$PWD"

# One mistake each: FILE, a sed script, what it breaks. Each copy must be
# refused; a mistake that changes nothing is a mistake of this list.
broken=(
  docker-compose.yml 's/^  agent:/  agents:/' "a service renamed"
  docker-compose.yml 's/^    healthcheck:$/    healthchek:/' "a misspelt key"
  docker-compose.yml 's/RLBENCH_MODE:-redis_lua/RLBENCH_MODE:-redis-lua/' "an unknown default mode"
  docker-compose.yml 's|"redis://coordinator:6379", "--allow-remote-targets"|"redis://cache:6379", "--allow-remote-targets"|' "agents on another coordinator"
  docker-compose.yml 's|"redis://coordinator:6379", "--allow-remote-targets"|"redis://coordinator:6379"|' "agents that may not reach the target"
  docker-compose.yml 's/^      - "3"$/      - "4"/' "the controller waits for 4 agents of 3"
  docker-compose.yml 's/^      replicas: 3$/      replicas: 2/' "2 agents started for a controller waiting for 3"
  docker-compose.yml 's|- reports:/rlbench/reports|- reports:/reports|' "the run folders off the volume"
  docker-compose.yml 's|"--name", "r1"|"--name", "r2"|' "two replicas of one name"
  reference-api/docker/nginx.conf 's/server r2:8080;/server r3:8080;/' "nginx balancing to no replica"
  reference-api/docker/replica.json 's/"limit": 10/"limit": 20/' "replicas enforcing another policy than the scenarios judge"
  deploy/Dockerfile 's|^COPY deploy/scenarios/|# COPY deploy/scenarios/|' "scenarios not in the image"
  deploy/Dockerfile 's|^WORKDIR /rlbench|WORKDIR /work|' "another working folder"
  deploy/scenarios/compose.toml 's|http://nginx:8080|http://nginx:80|' "the scenario on a port nginx does not listen on"
  deploy/scenarios/compose.toml 's/^window = "2s"/window = "3s"/' "the scenario judging another policy"
  deploy/scenarios/kubernetes.toml 's/^allow_remote = true/allow_remote = false/' "a remote target without the opt-in"
  deploy/scenarios/kubernetes.toml 's/^burst = 300/burts = 300/' "a misspelt scenario key"
  deploy/kubernetes/agents.yaml 's/^  parallelism: 3/  paralelism: 3/' "a misspelt Job field"
  deploy/kubernetes/agents.yaml 's/^  completions: 3/  completions: "3"/' "a count of the wrong type"
  deploy/kubernetes/agents.yaml 's/completionMode: Indexed/completionMode: NonIndexed/' "agents with no index"
  deploy/kubernetes/agents.yaml 's/^  parallelism: 3/  parallelism: 2/' "parallelism below completions"
  deploy/kubernetes/agents.yaml 's/{ name: RLBENCH_AGENTS, value: "3" }/{ name: RLBENCH_AGENTS, value: "4" }/' "RLBENCH_AGENTS not the pod count"
  deploy/kubernetes/agents.yaml 's/args: \["agent", "--once", /args: ["agent", /' "agent pods that never exit"
  deploy/kubernetes/agents.yaml 's/, "--idle-timeout", "5m"\]/]/' "agents that wait out the deadline for a controller that never came"
  deploy/kubernetes/agents.yaml 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' "an init container that may escalate its privileges"
  deploy/kubernetes/agents.yaml 's/        seccompProfile: { type: RuntimeDefault }/        seccompProfile: { type: Unconfined }/' "agents without the runtime's seccomp profile"
  deploy/kubernetes/agents.yaml 's/^  ttlSecondsAfterFinished: 3600/  # no ttl/' "a finished Job kept forever"
  deploy/kubernetes/agents.yaml 's/topologySpreadConstraints:/topologySpreadConstraint:/' "a misspelt spread (and none)"
  deploy/kubernetes/redis.yaml 's/runAsNonRoot: true/runAsNonRoot: false/' "Redis allowed to run as root"
  deploy/kubernetes/reference-api.yaml 's/            requests: { cpu: 250m, memory: 64Mi }/            limits: { cpu: 250m, memory: 64Mi }/' "a replica with no resource requests"
  deploy/kubernetes/controller.yaml 's/persistentVolumeClaim: { claimName: rlbench-reports }/emptyDir: {}/' "run folders that go with the pod"
  deploy/kubernetes/controller.yaml 's|            - redis://coordinator:6379|            - redis://redis:6379|' "the controller on the limiter's Redis"
  deploy/kubernetes/agents.yaml 's/restartPolicy: Never/restartPolicy: Always/' "a restart policy no Job takes"
  deploy/kubernetes/agents.yaml 's/^kind: Job/kind: Jobs/' "an unknown kind"
  deploy/kubernetes/agents.yaml 's|value: "redis://coordinator:6379"|value: "redis://coordinator:6380"|' "agents on a port the coordinator does not serve"
  deploy/kubernetes/controller.yaml 's/backoffLimit: 0/backoffLimit: 2/' "a controller retried (the load sent again)"
  deploy/kubernetes/controller.yaml 's/^            - "3"$/            - "2"/' "the controller waiting for 2 agents of 3"
  deploy/kubernetes/controller.yaml 's|deploy/scenarios/kubernetes.toml|deploy/scenarios/k8s.toml|' "a scenario that is not there"
  deploy/kubernetes/redis.yaml 's/port: 6379, targetPort: redis/port: 6380, targetPort: redis/' "the Redis Service on another port"
  deploy/kubernetes/agents.yaml 's/secretKeyRef: { name: rlbench-coordinator, key: token }/secretKeyRef: { name: rlbench-coordinator, key: other }/' "agents signing with another token than the controller"
  docker-compose.yml '0,/RLBENCH_COORDINATOR_TOKEN: /s/RLBENCH_COORDINATOR_TOKEN: /RLBENCH_COORDINATOR_TOKENS: /' "agents without the controller's token"
  deploy/kubernetes/redis.yaml 's/targetPort: redis/targetPort: db/' "a Service to a port the pod does not open"
  deploy/kubernetes/reference-api.yaml 's/port: 8080, targetPort: http/port: 80, targetPort: http/' "the replicas' Service off the scenario's port"
  deploy/kubernetes/reference-api.yaml 's/value: redis_lua/value: redis-lua/' "an unknown mode"
)
echo "== self-test: $((${#broken[@]} / 3)) broken copies, each must be refused"
n=0
refused=0
for ((i = 0; i < ${#broken[@]}; i += 3)); do
  file=${broken[i]} script=${broken[i + 1]} why=${broken[i + 2]}
  n=$((n + 1))
  copy=$work/copy-$n
  mkdir -p "$copy/reference-api"
  cp -r docker-compose.yml deploy "$copy/"
  cp -r reference-api/docker "$copy/reference-api/"
  sed -e "$script" "$file" >"$copy/$file"
  if cmp -s "$file" "$copy/$file"; then
    echo "deploy-check: self-test: '$script' changes nothing in $file: fix the list in $0" >&2
    exit 1
  fi
  if validate "$copy" >"$work/log-$n" 2>&1; then
    echo "deploy-check: self-test: a broken copy passed: $file: $why ($script)" >&2
    sed 's/^/    /' "$work/log-$n" >&2
    exit 1
  fi
  # The first line that says why: a check's own, else the tool's last.
  reason=$(grep -m1 -E '^(deploy-check: |ERROR |rlbench: )' "$work/log-$n" || tail -n 1 "$work/log-$n")
  reason=${reason//"$copy"\//}
  printf 'refused  %-34s %s\n         %s\n' "$file" "$why" "${reason:0:200}"
  refused=$((refused + 1))
  rm -rf "$copy"
done
echo "deploy-check: ok — the files validate, and each of $refused broken copies was refused"
