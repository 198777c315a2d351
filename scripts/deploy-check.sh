#!/usr/bin/env bash
# Validates what users deploy, on a machine with no Docker engine and no
# Kubernetes cluster: docker-compose.yml (the whole stack) and
# deploy/kubernetes/ (Redis, the replicas, the agents as an Indexed Job, the
# controller as a Job), with the controllers' scenarios. .ci/run calls it
# after `cargo build --release`. Three checks of each file's shape:
#   1. docker-compose config (Debian's docker-compose: the file's schema,
#      anchors and defaults) and config --services (the services by name);
#   2. kubernetes-validate --strict (PyPI; it ships the schemas, so it runs
#      offline) against Kubernetes 1.25 and 1.37: an unknown or misspelt
#      field, a wrong type fails;
#   3. rlbench check on each scenario of deploy/scenarios/.
# What ties the files together and no schema knows (agent counts, Redis
# URLs and ports, the scenario's target and policy, the paths in the image,
# Job settings, flags) is a Rust test read with rlbench's own readers,
# tests/it/deployment.rs (`cargo test --test it deployment`; CI runs it
# with the other tests), with broken copies of its own.
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

# validate ROOT: the three checks on ROOT, the repository or a copy of its
# deployment files. Prints what failed; returns 1 at the first failing check.
validate() {
  local root=$1 services
  # The defaults, not this shell's RLBENCH_MODE or a .env file of the user's.
  : >"$work/empty.env"
  # A token of the check's own: the file refuses to start without one.
  compose() { (cd "$root" && env -u RLBENCH_MODE RLBENCH_COORDINATOR_TOKEN=deploy-check-token-0123456789 docker-compose --env-file "$work/empty.env" -f docker-compose.yml "$@"); }
  compose config >/dev/null || return 1
  services=$(compose config --services | sort | xargs)
  if [ "$services" != "$services_wanted" ]; then
    echo "deploy-check: docker-compose.yml: services are \"$services\", not \"$services_wanted\"" >&2
    return 1
  fi
  echo "docker-compose config: ok (services: $services)"
  # An unknown kind is only a warning (exit 0) here: tests/it/deployment.rs
  # names every object.
  PYTHONPATH=$pylib python3 -m kubernetes_validate --strict --quiet -k 1.25.0 -k 1.37.0 \
    "$root"/deploy/kubernetes/*.yaml || return 1
  echo "kubernetes-validate --strict (1.25, 1.37): ok ($(cd "$root" && echo deploy/kubernetes/*.yaml))"
  for scenario in "$root"/deploy/scenarios/*.toml; do
    (cd "$root" && "$rlbench" check "${scenario#"$root"/}") || return 1
  done
}

echo "== validating docker-compose.yml, deploy/kubernetes/, deploy/scenarios/"
validate "$PWD"

# One mistake each: FILE, a sed script, what it breaks. Each copy must be
# refused; a mistake that changes nothing is a mistake of this list. These
# are the mistakes of a file's shape; those of how the files agree are
# tests/it/deployment.rs's broken copies.
broken=(
  docker-compose.yml 's/^  agent:/  agents:/' "a service renamed"
  docker-compose.yml 's/^    healthcheck:$/    healthchek:/' "a misspelt key"
  deploy/scenarios/kubernetes.toml 's/^allow_remote = true/allow_remote = false/' "a remote target without the opt-in"
  deploy/scenarios/kubernetes.toml 's/^burst = 300/burts = 300/' "a misspelt scenario key"
  deploy/kubernetes/agents.yaml 's/^  parallelism: 3/  paralelism: 3/' "a misspelt Job field"
  deploy/kubernetes/agents.yaml 's/^  completions: 3/  completions: "3"/' "a count of the wrong type"
  deploy/kubernetes/agents.yaml 's/topologySpreadConstraints:/topologySpreadConstraint:/' "a misspelt spread (and none)"
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
