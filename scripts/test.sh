#!/usr/bin/env bash
# The README's command 2: installs what the tests need when it is missing —
# redis-server, nginx, HAProxy, Varnish (with vmod_vsthrottle), Prometheus, Chromium, python3 + pip and
# node + npm (for the third-party limiters, whose pinned libraries
# scripts/limiters/install.sh brings, and the OTLP receiver, whose
# scripts/otlp/install.sh does), cargo-nextest — then runs the whole test suite. Without
# cargo-nextest (and no way to install it) it runs `cargo test --workspace`.
# Idempotent: what is there is skipped, in one line each. .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/need.sh

need redis-server redis-server redis redis
need nginx nginx-light nginx nginx
need haproxy haproxy haproxy haproxy
need varnishd "varnish varnish-modules" "varnish varnish-modules" varnish
need prometheus prometheus golang-github-prometheus prometheus
need chromium chromium chromium chromium
need python3 python3 python3 python3
if python3 -m pip --version >/dev/null 2>&1; then
  echo "skipped: pip is there"
else
  need pip3 python3-pip python3-pip python3
fi
need node nodejs nodejs node
need npm npm npm node
need_done

echo "== third-party limiters (scripts/limiters)"
scripts/limiters/install.sh
echo "== the OTLP receiver's libraries (scripts/otlp)"
scripts/otlp/install.sh

runner=(cargo nextest run --workspace)
if command -v cargo-nextest >/dev/null 2>&1; then
  echo "skipped: cargo-nextest is there"
elif [ "${RLBENCH_INSTALL:-yes}" != no ] && cargo install --locked --quiet cargo-nextest; then
  echo "installed cargo-nextest"
else
  echo "cargo-nextest could not be installed: running cargo test --workspace instead"
  runner=(cargo test --workspace)
fi
echo "== ${runner[*]}"
exec "${runner[@]}" "$@"
