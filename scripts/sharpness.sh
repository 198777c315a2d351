#!/usr/bin/env bash
# What can and cannot be proven from outside (docs/verifier.md, "What can
# and cannot be proven"): for every policy × fake (N replicas counting
# alone, a read-then-write race, burst + 1, rate + 10 %, the wrong
# algorithm) × answer time A (0.1 %–60 % of the window) × one clock or
# several, the definite violations the verifier finds as a share of the
# fake's true excess (the same trace judged with every decision's instant
# known). Simulated limiters, no network: the verifier's adversarial suite
# (crates/verify/tests/adversarial/sharpness.rs), in release.
#
# usage: scripts/sharpness.sh        (prints the Markdown table and the time taken)
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
cargo build --release -p rlbench-verify --tests --quiet
built=$SECONDS
cargo test --release -p rlbench-verify --test adversarial --quiet sharpness_table \
  -- --ignored --nocapture --test-threads 1 2>/dev/null \
  | grep '^|'
echo
echo "made on $(date -u +%Y-%m-%d) in $((SECONDS - built)) s (build $((built - start)) s), $(nproc) cores"
