#!/usr/bin/env bash
# The Redis path's throughput, measured side by side (issue: the replicas'
# Redis path against raw EVALSHA): a redis_lua token-bucket stack of two
# replicas driven closed-loop by `rlbench attack --concurrency 64` (10,000
# customers), against `redis-benchmark -c 64` running EVALSHA of the same
# script (lua/prelude.lua + lua/token_bucket.lua) on the same Redis, in
# alternating rounds; prints the medians and the ratio (goal >= 0.8), and
# the CPU each side costs Redis per call (redis-server's own user + system
# time). wrk drives the same replicas the same way in each round (two
# processes of 32 connections, one per replica, the same 10,000
# customers): what a lean HTTP generator in C gets through them on the
# same cores, beside rlbench's figure. Last, the budget: what 0.8x of
# EVALSHA's rate leaves for a decision on this machine's cores (cores /
# decisions/s), beside what a decision costs the generator (rlbench's own
# user + system time, GNU time), the replicas and Redis. Then the same
# stack on a Redis Cluster of 3 masters that rlbench
# starts itself: its decisions/s (redis-benchmark cannot join it: rlbench's
# Redis has a per-run password it never shows).
# usage: scripts/bench-redis.sh [ROUND] [ROUNDS]   (default 10s, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
round=${1:-10s}
rounds=${2:-3}
. scripts/lib/need.sh
need redis-server redis-server redis-server redis
need redis-benchmark redis-tools redis-tools redis
need wrk wrk wrk wrk
need /usr/bin/time time time gnu-time
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

# The Redis both sides share is this script's own, on loopback: the one
# rlbench starts has a per-run password it never shows (and
# redis-benchmark takes a password only on its command line).
redis_port=""
for _ in 1 2 3 4 5; do
  port=$((30000 + RANDOM % 20000))
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --dir "$work" >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 50); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then redis_port=$port; break 2; fi
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
done
[[ -n "$redis_port" ]] || { echo "bench-redis: redis-server did not start" >&2; cat "$work/redis.log" >&2; exit 3; }

cat >"$work/stack.toml" <<EOF
name = "bench-redis-path"
duration = "1s"
[redis]
url = "redis://127.0.0.1:$redis_port"
timeout = "1s"
[policy]
algorithm = "token_bucket"
capacity = 1000000
refill = "1000000/1s"
[cluster]
replicas = 2
[load]
rate = 1
[[arms]]
name = "bucket"
mode = "redis_lua"
EOF
# Serves the stack of scenario $1 (its replicas' lines in $2); sets
# serve_pid and replicas.
serve_stack() {
  "$bin" serve "$1" >"$2" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do
    [[ $(grep -c 'http://' "$2") -ge 2 ]] && break
    sleep 0.1
  done
  mapfile -t replicas < <(grep -o 'http://127[0-9.:]*' "$2")
  [[ ${#replicas[@]} -eq 2 ]] || {
    echo "bench-redis: the stack of $1 did not start" >&2
    cat "$2" >&2
    exit 3
  }
}
# Decisions/s of one closed-loop round against both replicas; with a file
# as $1, the generator's CPU seconds (user + system) go into it.
decisions() {
  local cpu=${1:-/dev/null}
  /usr/bin/time -f '%U %S' -o "$cpu" "$bin" attack "${replicas[0]}/api/transfers" "${replicas[1]}/api/transfers" -m POST \
    --key-header X-Customer-Id --keys 10000 --concurrency 64 --duration "$round" --quiet |
    sed -n 's/^rate of attack: \([0-9.]*\) .*/\1/p'
}
# wrk's decisions/s through both replicas at once ("-" unless every
# answer was a 2xx, with what wrk said on stderr).
cat >"$work/keys.lua" <<'EOF'
request = function()
  local key = string.format("customer-%05d", math.random(0, 9999))
  return wrk.format("POST", "/api/transfers", { ["X-Customer-Id"] = key }, nil)
end
EOF
wrk_decisions() {
  wrk -t1 -c32 -d"$round" -s "$work/keys.lua" "${replicas[0]}" >"$work/wrk0.txt" 2>&1 &
  local first=$!
  wrk -t1 -c32 -d"$round" -s "$work/keys.lua" "${replicas[1]}" >"$work/wrk1.txt" 2>&1 || true
  wait "$first" || true
  if grep -q 'Non-2xx\|Socket errors' "$work/wrk0.txt" "$work/wrk1.txt"; then
    grep -h 'Non-2xx\|Socket errors' "$work/wrk0.txt" "$work/wrk1.txt" >&2
    echo "-"
    return
  fi
  awk '/^Requests\/sec/ { s += $2; n++ } END { if (n == 2) printf "%.0f", s; else print "-" }' \
    "$work/wrk0.txt" "$work/wrk1.txt"
}
serve_stack "$work/stack.toml" "$work/serve.out"
script=$(cat lua/prelude.lua lua/token_bucket.lua)
sha=$(redis-cli -p "$redis_port" SCRIPT LOAD "$script")
# The replicas' own CPU (user + system, from /proc) per decision: steadier
# than a rate on a shared machine, and what the Redis path's work costs.
replica_pids=$(pgrep -P "$serve_pid" -f ' replica ' | tr '\n' ' ')
tick=$(getconf CLK_TCK)
replica_cpu() { local t=0 p; for p in $replica_pids; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
redis_cpu() { awk '{print $14 + $15}' "/proc/$redis_pid/stat"; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
secs=${round%s}
echo "== the Redis path: 2 redis_lua replicas (token bucket) vs redis-benchmark EVALSHA, 64 connections, $round rounds =="
r_all=() ; b_all=() ; u_all=() ; w_all=() ; g_all=()
d_all=() ; e_all=()
per_call() { awk -v c="$1" -v t="$tick" -v n="$2" 'BEGIN { if (n > 0) printf "%.0f", c / t * 1e6 / n; else print "-" }'; }
for i in $(seq "$rounds"); do
  c0=$(replica_cpu); d0=$(redis_cpu)
  r=$(decisions "$work/gen.cpu")
  c1=$(replica_cpu); d1=$(redis_cpu)
  g=$(awk -v r="${r:-0}" -v s="$secs" 'END { if (r > 0) printf "%.0f", ($1 + $2) * 1e6 / (r * s); else print "-" }' "$work/gen.cpu")
  d=$(per_call "$((d1 - d0))" "$(awk -v r="${r:-0}" -v s="$secs" 'BEGIN { print r * s }')")
  us=$(awk -v c="$((c1 - c0))" -v t="$tick" -v r="${r:-0}" -v s="$secs" 'BEGIN { if (r > 0) printf "%.0f", c / t * 1e6 / (r * s); else print "-" }')
  # As many calls as the round lasts at ~60k/s, then its own rate.
  e0=$(redis_cpu)
  b=$(redis-benchmark -p "$redis_port" -c 64 -n $((secs * 60000)) -r 10000 -q \
    EVALSHA "$sha" 1 "bench:{__rand_int__}" 1000000 1000000 "" 1000000 |
    tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
  e1=$(redis_cpu)
  e=$(per_call "$((e1 - e0))" "$((secs * 60000))")
  w=$(wrk_decisions)
  echo "round $i: rlbench decisions/s ${r:-?} (its own CPU ${g} us/decision, replicas' ${us} us, Redis' ${d} us)  redis-benchmark EVALSHA/s ${b:-?} (Redis' CPU ${e} us/call)  ratio $(ratio "${r:-0}" "${b:-0}")  wrk through the replicas ${w}/s (ratio $(ratio "${w/-/0}" "${b:-0}"))"
  g_all+=("$g"); r_all+=("${r:-0}"); b_all+=("${b:-0}"); u_all+=("$us"); d_all+=("$d"); e_all+=("$e"); w_all+=("${w/-/0}")
done
rm=$(printf '%s\n' "${r_all[@]}" | median)
bm=$(printf '%s\n' "${b_all[@]}" | median)
um=$(printf '%s\n' "${u_all[@]}" | median)
dm=$(printf '%s\n' "${d_all[@]}" | median)
em=$(printf '%s\n' "${e_all[@]}" | median)
wm=$(printf '%s\n' "${w_all[@]}" | median)
echo "median: rlbench $rm decisions/s, redis-benchmark $bm EVALSHA/s, ratio $(ratio "$rm" "$bm") (goal >= 0.8); replicas' CPU $um us/decision; Redis' CPU $dm us/decision vs $em us/EVALSHA"
echo "median: wrk through the same replicas $wm decisions/s, ratio $(ratio "$wm" "$bm"); rlbench / wrk $(ratio "$rm" "$wm")"
gm=$(printf '%s\n' "${g_all[@]}" | median)
cores=$(nproc)
awk -v c="$cores" -v b="$bm" -v g="$gm" -v u="$um" -v d="$dm" 'BEGIN {
  if (b <= 0) exit
  printf "budget at 0.8x: %d cores / %.0f decisions/s = %.0f us a decision for everything; spent today: generator %s + replicas %s + Redis %s = %d us\n",
    c, 0.8 * b, c * 1e6 / (0.8 * b), g, u, d, g + u + d
}'
kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
serve_pid=""

# --- the same stack on a Redis Cluster of 3 masters ---------------------------
sed -e 's/^url = .*/topology = "cluster"\nmasters = 3/' -e 's/^name = .*/name = "bench-redis-cluster"/' \
  "$work/stack.toml" >"$work/cluster.toml"
serve_stack "$work/cluster.toml" "$work/cluster.out"
echo "== the same, on a Redis Cluster of 3 masters (rlbench's own), $round rounds =="
k_all=()
for i in $(seq "$rounds"); do
  k=$(decisions)
  echo "round $i: rlbench decisions/s ${k:-?}"
  k_all+=("${k:-0}")
done
km=$(printf '%s\n' "${k_all[@]}" | median)
echo "median: rlbench on the cluster $km decisions/s ($(ratio "$km" "$rm") of one node's)"
