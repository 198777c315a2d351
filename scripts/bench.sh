#!/usr/bin/env bash
# rlbench's load-generator benchmarks, measured side by side in one run
# (see BENCHMARKS.md for the latest figures):
#   1. closed loop: `rlbench attack --concurrency 64` vs `wrk -t2 -c64` and
#      `oha -c64`, alternating rounds, against nginx's static /plain (one
#      worker) and against one reference-API replica's /healthz; prints the
#      medians and rlbench's ratios to each peer;
#   2. open loop: `rlbench attack --rate R` vs `oha -q R --latency-correction
#      -c 256` at 20k, 30k, 40k and 50k requests/s against nginx, in
#      alternating 8 s rounds: each one's achieved rate, p50 and p99 from
#      the intended send time and rlbench's schedule lag p99, then the
#      medians, rlbench's p99 over oha's and whether rlbench held the rate
#      (achieved >= 99%, p99 <= oha's); then rlbench's schedule lag at 5k,
#      20k, 50k against the reference API;
#   3. verifier speed: 10 M synthetic events (cargo bench -p rlbench-verify --bench verifier),
#      and reading 6 M synthetic events back, binary trace vs CSV
#      (cargo bench --bench trace);
#   4. peak RSS of a 5-minute `rlbench run` at 20k requests/s, verifier included;
#   5. `rlbench report` of that run;
#   6. the Redis path: two redis_lua replicas against redis-benchmark EVALSHA
#      of the same script on the same Redis (scripts/bench-redis.sh);
#   7. TLS and HTTP/2 against oha on nginx (scripts/bench-tls.sh).
#
# usage: scripts/bench.sh [--quick] [SECTION...]   (--quick: shorter rounds,
# 30 s instead of 5 min for the RSS run, for a smoke test of the script
# itself; SECTIONs, default all: closed open verifier rss redis tls)
# Installs what it needs when missing (wrk, GNU time and nginx from the
# system's packages, oha with cargo install); RLBENCH_INSTALL=no: only says.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && { quick=1; shift; }
sections=("$@")
for section in "${sections[@]}"; do
  case "$section" in
    closed | open | verifier | rss | redis | tls) ;;
    *) echo "bench: no section '$section' (closed open verifier rss redis tls)" >&2; exit 2 ;;
  esac
done
want() { [[ ${#sections[@]} -eq 0 || " ${sections[*]} " == *" $1 "* ]]; }
round=10s; rounds=3; open_for=8s; rss_for=5m; open_rates=(20000 30000 40000 50000)
if ((quick)); then round=3s; rounds=1; open_for=3s; rss_for=30s; open_rates=(20000 30000); fi
connections=64

. scripts/lib/need.sh
need wrk wrk wrk wrk
need /usr/bin/time time time gnu-time
need nginx nginx-light nginx nginx
need_done
if ! command -v oha >/dev/null 2>&1; then
  if [ "${RLBENCH_INSTALL:-yes}" != no ] && cargo install --locked --quiet oha; then
    echo "installed oha (cargo install oha)"
  else
    echo "bench: oha is missing (cargo install oha)" >&2
    exit 3
  fi
fi
cargo build --release --quiet
bin=target/release/rlbench
work=$(mktemp -d)
serve_pid=""
nginx_pid=""
cleanup() {
  [[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
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
# nginx, one worker, answering a static /plain on a free loopback port.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
chmod 755 "$work"
cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
error_log stderr error;
events { worker_connections 8192; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$port;
    location = /plain { return 200 "ok\n"; }
  }
}
NGINX
nginx -p "$work" -c nginx.conf -g "daemon off; pid $work/nginx.pid;" &
nginx_pid=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
plain="http://127.0.0.1:$port/plain"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "tools: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2); $(oha --version); $("$bin" --version)"
echo "endpoints: $plain (nginx, one worker), $url (one reference-API replica); all on this machine"
echo

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# --- 1. closed loop ----------------------------------------------------------
if want closed; then
  wrk_rps() { wrk -t2 -c"$connections" -d"$round" "$1" | sed -n 's/^Requests\/sec: *\([0-9.]*\)$/\1/p'; }
  oha_rps() {
    oha --no-tui --output-format json -c "$connections" -z "$round" "$1" 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"]["requestsPerSec"])'
  }
  rlbench_rps() {
    "$bin" attack "$1" --concurrency "$connections" --duration "$round" --quiet |
      sed -n 's/^rate of attack: \([0-9.]*\) requests\/s (closed loop)$/\1/p'
  }
  for target in "$plain" "$url"; do
    echo "== closed loop, $connections connections, $round rounds: $target (requests/s) =="
    w_all=(); o_all=(); r_all=()
    for i in $(seq "$rounds"); do
      w=$(wrk_rps "$target"); o=$(oha_rps "$target"); r=$(rlbench_rps "$target")
      w_all+=("$w"); o_all+=("$o"); r_all+=("$r")
      printf 'round %d: wrk %.0f  oha %.0f  rlbench %.0f  rlbench/wrk %s  rlbench/oha %s\n' \
        "$i" "$w" "$o" "$r" "$(ratio "$r" "$w")" "$(ratio "$r" "$o")"
    done
    wm=$(printf '%s\n' "${w_all[@]}" | median)
    om=$(printf '%s\n' "${o_all[@]}" | median)
    rmed=$(printf '%s\n' "${r_all[@]}" | median)
    printf 'medians: wrk %.0f  oha %.0f  rlbench %.0f  rlbench/wrk %s (goal >= 1.0)  rlbench/oha %s\n\n' \
      "$wm" "$om" "$rmed" "$(ratio "$rmed" "$wm")" "$(ratio "$rmed" "$om")"
  done
fi

# --- 2. open loop ------------------------------------------------------------
# Both from the intended send time: oha with --latency-correction, rlbench
# always. "achieved p50 p99" for oha; "achieved p50 p99 lag-p99" for rlbench.
oha_open() {
  oha --no-tui --output-format json -q "$2" --latency-correction -c 256 -z "$open_for" "$1" 2>/dev/null |
    python3 -c 'import json, sys
s = json.load(sys.stdin)
p = s["latencyPercentiles"]
print(s["summary"]["requestsPerSec"], p["p50"] * 1000, p["p99"] * 1000)'
}
rlbench_open() {
  { "$bin" attack "$1" --rate "$2" --duration "$open_for" --quiet --format json 2>/dev/null || true; } |
    python3 -c 'import json, sys
a = json.load(sys.stdin)["arms"][0]
print(a["rate"]["achieved_rps"], a["latency_ms"]["p50"], a["latency_ms"]["p99"], a["schedule_lag_ms"]["p99"])'
}
if want open; then
  echo "== open loop against nginx: oha -q R --latency-correction -c 256 vs rlbench attack --rate R," \
    "$rounds alternating $open_for rounds (latency from the intended send time, ms) =="
  for rate in "${open_rates[@]}"; do
    oa_all=(); o50_all=(); o99_all=(); ra_all=(); r50_all=(); r99_all=(); rlag_all=()
    for i in $(seq "$rounds"); do
      read -r oa o50 o99 < <(oha_open "$plain" "$rate")
      read -r ra r50 r99 rlag < <(rlbench_open "$plain" "$rate")
      oa_all+=("$oa"); o50_all+=("$o50"); o99_all+=("$o99")
      ra_all+=("$ra"); r50_all+=("$r50"); r99_all+=("$r99"); rlag_all+=("$rlag")
      printf '%6d round %d: oha %8.0f/s p50 %7.2f p99 %8.2f | rlbench %8.0f/s p50 %7.2f p99 %8.2f lag p99 %8.2f\n' \
        "$rate" "$i" "$oa" "$o50" "$o99" "$ra" "$r50" "$r99" "$rlag"
    done
    oa=$(printf '%s\n' "${oa_all[@]}" | median); o50=$(printf '%s\n' "${o50_all[@]}" | median)
    o99=$(printf '%s\n' "${o99_all[@]}" | median); ra=$(printf '%s\n' "${ra_all[@]}" | median)
    r50=$(printf '%s\n' "${r50_all[@]}" | median); r99=$(printf '%s\n' "${r99_all[@]}" | median)
    rlag=$(printf '%s\n' "${rlag_all[@]}" | median)
    held=$(awk -v a="$ra" -v t="$rate" -v r="$r99" -v o="$o99" \
      'BEGIN { print (a >= 0.99 * t && r <= o) ? "yes" : "no" }')
    printf '%6d median:  oha %8.0f/s p50 %7.2f p99 %8.2f | rlbench %8.0f/s p50 %7.2f p99 %8.2f lag p99 %8.2f | p99 rlbench/oha %s; held (achieved >= 99%%, p99 <= oha'"'"'s): %s\n' \
      "$rate" "$oa" "$o50" "$o99" "$ra" "$r50" "$r99" "$rlag" "$(ratio "$r99" "$o99")" "$held"
  done
  echo
  echo "== rlbench open loop against the reference API, $open_for each =="
  for rate in 5000 20000 50000; do
    # A rate the machine cannot hold fails the attack's gate (requests
    # never sent): its line is still printed, and still the figure.
    line=$("$bin" attack "$url" --rate "$rate" --duration "$open_for" --quiet 2>/dev/null | grep '^rate of attack:' || true)
    achieved=$(sed -n 's/^rate of attack: \([0-9.]*\) of.*/\1/p' <<<"$line")
    lag=$(sed -n 's/.*schedule lag \(.*\)$/\1/p' <<<"$line")
    awk -v a="$achieved" -v t="$rate" -v lag="$lag" \
      'BEGIN { printf "target %6d: achieved %8.1f (%.3f of target); lag %s\n", t, a, a / t, lag }'
  done
  echo
fi
# --- 3. verifier speed -------------------------------------------------------
if want verifier; then
  echo "== verifier: 10 M synthetic events =="
  cargo bench --quiet -p rlbench-verify --bench verifier 2>/dev/null | grep -v '^$'
  echo
  echo "== reading a run back: synthetic events, binary trace vs CSV =="
  if ((quick)); then trace_events=1000000; else trace_events=6000000; fi
  cargo bench --quiet --bench trace -- "$trace_events" 2>/dev/null | grep -v '^$'
  echo
fi

# --- 4. peak RSS -------------------------------------------------------------
if want rss; then
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
fi

# --- 6. the Redis path -------------------------------------------------------
if want redis; then
  echo
  scripts/bench-redis.sh "$round" "$rounds" | grep -v '^skipped:'
fi

# --- 7. TLS and HTTP/2 -------------------------------------------------------
if want tls; then
  echo
  scripts/bench-tls.sh "$round" "$rounds"
fi
