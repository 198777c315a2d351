#!/usr/bin/env bash
# TLS and HTTP/2: rlbench against oha on the same endpoints, in the same
# run (part 7 of scripts/bench.sh; figures in BENCHMARKS.md). nginx with
# one worker answers a static /plain over HTTP/1.1 + TLS and over HTTP/2
# + TLS (ALPN h2) on free loopback ports, with a certificate made here by
# openssl's command line (the certificate only; rlbench itself links no
# OpenSSL). Both tools check nothing of it (--insecure) so that neither
# pays for a check the other skips.
#   1. closed loop, 64 workers: rlbench attack --concurrency 64 vs oha -c 64
#      (HTTP/2: --http 2 vs oha --http2 -p 1: 64 connections, one stream
#      each), alternating rounds, medians and rlbench/oha;
#   2. open loop at 5k and 20k requests/s: achieved rate and p99 latency
#      from the intended send (oha --latency-correction), and rlbench's
#      schedule lag (HTTP/2: rlbench shares one connection per lane).
# usage: scripts/bench-tls.sh [ROUND ROUNDS]   (default 10s 3)
set -euo pipefail
cd "$(dirname "$0")/.."
round=${1:-10s}
rounds=${2:-3}
command -v oha >/dev/null || { echo "bench-tls: oha is missing (cargo install oha)" >&2; exit 3; }
command -v openssl >/dev/null || { echo "bench-tls: openssl (the command) is missing: apt-get install openssl" >&2; exit 3; }
command -v nginx >/dev/null || { echo "bench-tls: nginx is missing: apt-get install nginx-light" >&2; exit 3; }
cargo build --release --quiet
bin=target/release/rlbench
work=$(mktemp -d)
nginx_pid=""
cleanup() {
  [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p1=$(free_port); p2=$(free_port)
chmod 755 "$work"
cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
error_log stderr error;
events { worker_connections 8192; }
http {
  access_log off;
  ssl_certificate $work/cert.pem;
  ssl_certificate_key $work/key.pem;
  server { listen 127.0.0.1:$p1 ssl; location = /plain { return 200 "ok\n"; } }
  server { listen 127.0.0.1:$p2 ssl http2; location = /plain { return 200 "ok\n"; } }
}
NGINX
nginx -p "$work" -c nginx.conf -g "daemon off; pid $work/nginx.pid;" &
nginx_pid=$!
for port in "$p1" "$p2"; do
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
done
h1="https://127.0.0.1:$p1/plain"
h2="https://127.0.0.1:$p2/plain"
echo "tools: $(oha --version); $("$bin" --version); nginx one worker, TLS 1.3, a 2048-bit RSA certificate"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
oha_rps() {
  oha --no-tui --output-format json --insecure -c 64 -z "$round" "$@" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"]["requestsPerSec"])'
}
rlbench_rps() {
  "$bin" attack "$1" --insecure --concurrency 64 --duration "$round" --quiet "${@:2}" 2>/dev/null |
    sed -n 's/^rate of attack: \([0-9.]*\) requests\/s (closed loop)$/\1/p'
}
closed() {
  local name=$1 url=$2 oha_flags=$3 rl_flags=$4
  echo "== closed loop, 64 workers, $round rounds: $name (requests/s) =="
  local o_all=() r_all=()
  for i in $(seq "$rounds"); do
    # shellcheck disable=SC2086
    o=$(oha_rps $oha_flags "$url"); r=$(rlbench_rps "$url" $rl_flags)
    o_all+=("$o"); r_all+=("$r")
    printf 'round %d: oha %.0f  rlbench %.0f  rlbench/oha %s\n' "$i" "$o" "$r" "$(ratio "$r" "$o")"
  done
  om=$(printf '%s\n' "${o_all[@]}" | median)
  rm_=$(printf '%s\n' "${r_all[@]}" | median)
  printf 'medians: oha %.0f  rlbench %.0f  rlbench/oha %s\n\n' "$om" "$rm_" "$(ratio "$rm_" "$om")"
}
closed "HTTP/1.1 over TLS" "$h1" "" ""
closed "HTTP/2 over TLS" "$h2" "--http2 -p 1" "--http 2"

oha_open() {
  oha --no-tui --output-format json --insecure -q "$2" --latency-correction -c 256 -z "$round" "${@:3}" "$1" 2>/dev/null |
    python3 -c 'import json, sys
s = json.load(sys.stdin)
print(s["summary"]["requestsPerSec"], s["latencyPercentiles"]["p99"] * 1000)'
}
rlbench_open() {
  "$bin" attack "$1" --insecure --rate "$2" --duration "$round" --quiet "${@:3}" 2>/dev/null | awk '
    $1 == "attack" && $2 ~ /^[0-9]+$/ { p99 = $(NF - 2) }
    /^rate of attack:/ { achieved = $4; lag = $0; sub(/.*schedule lag /, "", lag) }
    END { print achieved, p99, lag }'
}
echo "== open loop, $round each: achieved requests/s, p99 ms from the intended send =="
for rate in 5000 20000; do
  read -r oa o99 < <(oha_open "$h1" "$rate")
  read -r ra r99 rlag < <(rlbench_open "$h1" "$rate")
  printf 'HTTP/1.1+TLS %6d: oha %8.1f/s p99 %8.2f | rlbench %8.1f/s p99 %s (lag %s)\n' \
    "$rate" "$oa" "$o99" "$ra" "$r99" "$rlag"
  read -r oa o99 < <(oha_open "$h2" "$rate" --http2)
  read -r ra r99 rlag < <(rlbench_open "$h2" "$rate" --http 2)
  printf 'HTTP/2+TLS   %6d: oha %8.1f/s p99 %8.2f | rlbench %8.1f/s p99 %s (lag %s)\n' \
    "$rate" "$oa" "$o99" "$ra" "$r99" "$rlag"
done
