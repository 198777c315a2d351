#!/usr/bin/env bash
# Third-party limiters judged from outside: installs them (install.sh),
# starts one server per URL of the scenario, runs it and stops the servers
# on every way out.
#
#   scripts/limiters/demo.sh limits                 # scenarios/limits.toml, ports 18100-18109
#   scripts/limiters/demo.sh rate-limiter-flexible  # scenarios/rate-limiter-flexible.toml, 18110-18113
#   scripts/limiters/demo.sh stripe-bucket          # scenarios/stripe-bucket.toml, 18120-18123 (+ redis-server on 18129)
#   scripts/limiters/demo.sh stripe-app-clocks      # scenarios/stripe-app-clocks.toml, 18124-18125 (+ redis-server on 18129)
#
# Needs python3 with pip, node with npm, redis-server for the stripe ones,
# and a built rlbench (cargo build --release). Extra arguments go to
# rlbench run.
set -euo pipefail
cd "$(dirname "$0")/../.."

which=${1:-}
shift || true
case "$which" in
  limits)
    # port strategy: the arms of scenarios/limits.toml
    servers=(
      "18100 moving-window" "18101 moving-window" "18102 moving-window"
      "18103 sliding-window-counter" "18104 sliding-window-counter" "18105 sliding-window-counter"
      "18106 fixed-window" "18107 fixed-window" "18108 fixed-window" "18109 fixed-window"
    )
    ;;
  rate-limiter-flexible)
    servers=("18110" "18111" "18112" "18113")
    ;;
  stripe-bucket)
    servers=("18120" "18121" "18122" "18123")
    ;;
  stripe-app-clocks)
    # port, the app clock's offset (µs): two app servers 1 ms apart
    servers=("18124 0" "18125 1000")
    ;;
  *)
    echo "usage: scripts/limiters/demo.sh limits|rate-limiter-flexible|stripe-bucket|stripe-app-clocks [rlbench run args]" >&2
    exit 2
    ;;
esac
rlbench=./target/release/rlbench
[ -x "$rlbench" ] || { echo "demo: build rlbench first: cargo build --release" >&2; exit 3; }
scripts/limiters/install.sh >/dev/null

pids=()
# (|| true: under set -e a failing step would end the trap, and the script
# with its status instead of rlbench's.)
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT
if [[ "$which" == stripe-* ]]; then
  command -v redis-server >/dev/null || { echo "demo: redis-server is not installed (Debian: apt-get install redis-server)" >&2; exit 3; }
  redis-server --port 18129 --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --dir "${TMPDIR:-/tmp}" --logfile "" >/dev/null &
  pids+=($!)
fi
for s in "${servers[@]}"; do
  read -r port strategy <<<"$s"
  if [ "$which" = stripe-bucket ]; then
    REDIS_URL=redis://127.0.0.1:18129 PYTHONPATH=scripts/limiters/pylib \
      python3 scripts/limiters/stripe_bucket_server.py "$port" 10 5 &
  elif [ "$which" = stripe-app-clocks ]; then
    # $strategy: the offset; the buckets shared by both servers.
    REDIS_URL=redis://127.0.0.1:18129 PYTHONPATH=scripts/limiters/pylib \
      STRIPE_APP_CLOCK_OFFSET_US="$strategy" STRIPE_SHARED=1 \
      python3 scripts/limiters/stripe_bucket_server.py "$port" 10 5 &
  elif [ "$which" = limits ]; then
    PYTHONPATH=scripts/limiters/pylib python3 scripts/limiters/limits_server.py \
      "$port" "$strategy" "10 per 1 second" &
  else
    node scripts/limiters/rlf_server.js "$port" 10 1 &
  fi
  pids+=($!)
done

# Ready when every port answers (at most 10 s).
listening() {
  local s port
  for s in "${servers[@]}"; do
    port=${s%% *}
    (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null || return 1
  done
}
for _ in $(seq 100); do
  listening && break
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "demo: a server did not start (its port in use?)" >&2; exit 3; }
  done
  sleep 0.1
done
listening || { echo "demo: the servers do not answer" >&2; exit 3; }

status=0
"$rlbench" run "scenarios/$which.toml" "$@" || status=$?
exit $status
