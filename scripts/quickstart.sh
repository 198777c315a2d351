#!/usr/bin/env bash
# The README's command 1: what the main scenario needs, then the run.
# Installs redis-server through the system's package manager when it is
# missing (it says so first; RLBENCH_INSTALL=no only says how), builds
# rlbench, runs scenarios/three-replicas.toml and prints where the report is.
# Idempotent: what is there is skipped, in one line. Extra arguments go to
# `rlbench run` (e.g. --duration 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/need.sh

if ! command -v cargo >/dev/null 2>&1; then
  echo "rlbench: cargo not found on PATH: install Rust (stable) from your system or rustup" >&2
  exit 3
fi
need redis-server redis-server redis redis
need_done

echo "== building rlbench (release)"
cargo build --release --quiet
echo "== rlbench run scenarios/three-replicas.toml"
status=0
./target/release/rlbench run scenarios/three-replicas.toml "$@" || status=$?
if [ -e reports/three-replicas/latest/report.html ]; then
  echo "open: reports/three-replicas/latest/report.html"
fi
exit "$status"
