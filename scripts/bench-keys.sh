#!/usr/bin/env bash
# A replica under a flood of distinct keys (issue 39, hostile clients):
# one reference-API replica per mode, sent as many requests as 32
# connections carry in 90 s (closed loop: a bounded number of connections,
# so their buffers do not swamp what the keys take), each to a key drawn
# from 4 M (`rlbench attack --keys 4000000`: ~1.3 M requests reach ~1.1 M
# distinct keys). Prints per mode the replica's peak
# RSS (VmHWM), its live and refused keys (from /metrics), and for Redis
# modes what Redis holds (used_memory, keys). local keeps at most
# max_keys (1,000,000) live keys and refuses new ones beyond; the Redis
# modes keep nothing per key in the replica, and every Redis key expires.
#
# usage: scripts/bench-keys.sh [--quick]   (--quick: 9 s a mode)
set -euo pipefail
cd "$(dirname "$0")/.."

requests_for=90s
[[ "${1:-}" == "--quick" ]] && requests_for=9s
. scripts/lib/need.sh
need redis-server redis-server redis redis
need_done
cargo build --release --quiet
bin=target/release/rlbench
work=$(mktemp -d)
serve_pid=""
redis_pid=""
cleanup() {
  [[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  [[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

printf '%-12s %10s %12s %12s %14s %14s %12s\n' mode requests "peak RSS MB" "live keys" "refused keys" "redis used MB" "redis keys"
# A Redis of the script's own (rlbench's own would hide its password).
redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" PING >/dev/null 2>&1 && break; sleep 0.1; done

for mode in ${RLBENCH_BENCH_MODES:-local redis_lua redis_naive}; do
  redis-cli -p "$redis_port" FLUSHALL >/dev/null
  cat >"$work/keys.toml" <<EOF
name = "bench-keys"
duration = "1s"
[policy]
algorithm = "fixed_window"
limit = 10
window = "1m"
[load]
rate = 1
[redis]
url = "redis://127.0.0.1:$redis_port"
[[arms]]
name = "one"
mode = "$mode"
replicas = 1
EOF
  out="$work/serve-$mode.out"
  "$bin" serve "$work/keys.toml" >"$out" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do
    grep -q 'POST http://' "$out" 2>/dev/null && break
    sleep 0.1
  done
  base=$(grep -o 'POST http://127[0-9.:]*' "$out" | head -1 | cut -d' ' -f2 || true)
  replica=$(pgrep -f "replica --run-id rlbench-serve-$serve_pid" | head -1 || true)
  if [[ -z "$base" || -z "$replica" ]]; then
    echo "bench-keys: $mode: rlbench serve did not start its replica; its output:" >&2
    tail -n 5 "$out" >&2
    kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; serve_pid=""
    continue
  fi
  sent=$("$bin" attack "$base/api/transfers" -m POST --concurrency 32 --duration "$requests_for" \
    --key-header X-Customer-Id --keys 4000000 --max-error-ratio 1 -q --format json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["arms"][0]["requests"]["sent"])' || echo '?')
  # The replica gone by now is said, not a reason to stop the other modes.
  hwm=$(awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$replica/status" 2>/dev/null || echo '?(gone)')
  metrics=$(curl -s --max-time 10 "$base/metrics" || true)
  live=$(awk '/^rlbench_live_keys/ {print $2}' <<<"$metrics")
  refused=$(awk '/^rlbench_keys_refused_total/ {print $2}' <<<"$metrics")
  used="-"; rkeys="-"
  if [[ "$mode" != local ]]; then
    # A Redis mode's replica holds no per-key state: nothing to count.
    live="-"; refused="-"
    used=$(redis-cli -p "$redis_port" INFO memory | awk -F: '/^used_memory:/ {printf "%.0f", $2/1048576}')
    rkeys=$(redis-cli -p "$redis_port" DBSIZE)
  fi
  printf '%-12s %10s %12s %12s %14s %14s %12s\n' "$mode" "$sent" "$hwm" "${live:-?}" "${refused:-?}" "${used:-?}" "$rkeys"
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=""
done
