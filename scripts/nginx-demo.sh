#!/usr/bin/env bash
# Starts nginx with scenarios/nginx/nginx.conf (ports 18080-18082) in a
# temporary folder, runs scenarios/nginx.toml against it, and stops nginx
# on every way out. Needs nginx (Debian: apt-get install nginx-light) and a
# built rlbench (cargo build --release). Extra arguments go to rlbench run.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v nginx >/dev/null 2>&1 || {
  echo "nginx-demo: nginx is not installed (Debian: apt-get install nginx-light)" >&2
  exit 3
}
rlbench=./target/release/rlbench
[ -x "$rlbench" ] || { echo "nginx-demo: build rlbench first: cargo build --release" >&2; exit 3; }

prefix=$(mktemp -d)
chmod 755 "$prefix" # nginx's workers run as another user
cp -r scenarios/nginx/. "$prefix/"
nginx -p "$prefix" -c nginx.conf -g "daemon off; pid $prefix/nginx.pid;" &
nginx_pid=$!
# (|| true: under set -e a failing step would end the trap, and the
# script with its status instead of rlbench's.)
trap 'kill -TERM $nginx_pid 2>/dev/null || true; wait $nginx_pid 2>/dev/null || true; rm -rf "$prefix"' EXIT

# Ready when every port answers (at most 5 s).
listening() {
  local port
  for port in 18080 18081 18082; do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null || return 1
  done
}
for _ in $(seq 50); do
  listening && break
  kill -0 $nginx_pid 2>/dev/null || { echo "nginx-demo: nginx did not start (ports 18080-18082 in use?)" >&2; exit 3; }
  sleep 0.1
done
listening || { echo "nginx-demo: nginx does not answer on 18080-18082" >&2; exit 3; }

# rlbench's exit code is the script's (0 passed, 1 gate failed, 130
# interrupted, ...); the trap stops nginx either way.
status=0
"$rlbench" run scenarios/nginx.toml "$@" || status=$?
exit $status
