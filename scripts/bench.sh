#!/usr/bin/env bash
# rlbench's load-generator benchmarks, measured side by side in one run
# (see BENCHMARKS.md for the latest figures):
#   1. raw throughput: `rlbench attack --concurrency C` vs `wrk -c C` against
#      the same trivial loopback endpoint, alternating rounds; prints the
#      median rlbench/wrk ratio (must be >= 0.8);
#   2. open-loop accuracy at 5k, 20k and 50k requests/s: achieved/target and
#      schedule lag percentiles;
#   3. verifier speed: 10 M synthetic events (cargo bench --bench verifier),
#      and reading 6 M synthetic events back, binary trace vs CSV
#      (cargo bench --bench trace);
#   4. peak RSS of a 5-minute `rlbench run` at 20k requests/s, verifier included.
#
# usage: scripts/bench.sh [--quick]   (--quick: shorter rounds, 30 s instead
# of 5 min for the RSS run, for a smoke test of the script itself)
# Needs wrk and GNU time (Debian: apt-get install wrk time).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
round=10s; rounds=3; open_for=10s; rss_for=5m
if ((quick)); then round=3s; rounds=1; open_for=3s; rss_for=30s; fi
connections=64

for tool in wrk /usr/bin/time; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench: $tool is missing (Debian: apt-get install wrk time)" >&2
    exit 3
  fi
done

cargo build --release --quiet
bin=target/release/rlbench
work=$(mktemp -d)
serve_pid=""
cleanup() {
  [[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The trivial endpoint: one reference-API replica's GET /healthz.
cat >"$work/endpoint.toml" <<'EOF'
name = "bench-endpoint"
duration = "1s"
[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"
[load]
rate = 1
[[arms]]
name = "single"
mode = "local"
replicas = 1
EOF
"$bin" serve "$work/endpoint.toml" >"$work/serve.out" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do
  grep -q 'http://' "$work/serve.out" && break
  sleep 0.1
done
base=$(grep -o 'http://127[0-9.:]*' "$work/serve.out" | head -1)
[[ -n "$base" ]] || { echo "bench: the endpoint did not start" >&2; cat "$work/serve.out" >&2; exit 3; }
url="$base/healthz"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "endpoint: $url (one reference-API replica on the same machine)"
echo

# --- 1. raw throughput -------------------------------------------------------
rlbench_rps() {
  "$bin" attack "$url" --concurrency "$connections" --duration "$round" --quiet |
    sed -n 's/^rate of attack: \([0-9.]*\) requests\/s (closed loop)$/\1/p'
}
wrk_rps() {
  wrk -t2 -c"$connections" -d"$round" "$url" | sed -n 's/^Requests\/sec: *\([0-9.]*\)$/\1/p'
}
echo "== raw throughput, $connections connections, $round rounds (requests/s) =="
ratios=()
for i in $(seq "$rounds"); do
  w=$(wrk_rps); r=$(rlbench_rps)
  ratio=$(awk -v r="$r" -v w="$w" 'BEGIN { printf "%.2f", r / w }')
  ratios+=("$ratio")
  printf 'round %d: wrk %.0f  rlbench %.0f  ratio %s\n' "$i" "$w" "$r" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "rlbench/wrk ratio (median): $median  (must be >= 0.8, goal >= 1.0)"
echo

# --- 2. open-loop accuracy ---------------------------------------------------
echo "== open loop, $open_for each =="
for rate in 5000 20000 50000; do
  line=$("$bin" attack "$url" --rate "$rate" --duration "$open_for" --quiet | grep '^rate of attack:')
  achieved=$(sed -n 's/^rate of attack: \([0-9.]*\) of.*/\1/p' <<<"$line")
  lag=$(sed -n 's/.*schedule lag \(.*\)$/\1/p' <<<"$line")
  awk -v a="$achieved" -v t="$rate" -v lag="$lag" \
    'BEGIN { printf "target %6d: achieved %8.1f (%.3f of target); lag %s\n", t, a, a / t, lag }'
done
echo

# --- 3. verifier speed -------------------------------------------------------
echo "== verifier: 10 M synthetic events =="
cargo bench --quiet --bench verifier 2>/dev/null | grep -v '^$'
echo
echo "== reading a run back: synthetic events, binary trace vs CSV =="
if ((quick)); then trace_events=1000000; else trace_events=6000000; fi
cargo bench --quiet --bench trace -- "$trace_events" 2>/dev/null | grep -v '^$'
echo

# --- 4. peak RSS -------------------------------------------------------------
echo "== peak RSS: rlbench run at 20000 requests/s for $rss_for, verified =="
cat >"$work/rss.toml" <<'EOF'
name = "bench-rss"
duration = "5m"
[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"
[load]
rate = 20000
keys = 1000
[[arms]]
name = "local"
mode = "local"
replicas = 1
EOF
RLBENCH_LOG=debug /usr/bin/time -f '%M' -o "$work/rss.kb" \
  "$bin" run "$work/rss.toml" --duration "$rss_for" --out "$work/rss-run" --quiet \
  >"$work/rss.table" 2>"$work/rss.log"
grep -E '^(local|rate of|generator|errors)' "$work/rss.table"
own=$(sed -n 's/.*peak RSS of rlbench itself: \([0-9]*\) MB.*/\1/p' "$work/rss.log")
echo "peak RSS of rlbench: ${own:-?} MB (limit 200 MB)"
awk '{ printf "peak RSS of rlbench or its replica, whichever is larger (GNU time): %.0f MB\n", $1 / 1024 }' "$work/rss.kb"

# --- 5. reading a long run back ----------------------------------------------
events=$(($("$bin" export "$work/rss-run" | wc -l) - 1))
started=$(date +%s.%N)
"$bin" report "$work/rss-run" >/dev/null
awk -v s="$started" -v e="$(date +%s.%N)" -v n="$events" \
  'BEGIN { printf "rlbench report of that run (%d events read back from the trace, verified, rendered): %.1f s\n", n, e - s }'
