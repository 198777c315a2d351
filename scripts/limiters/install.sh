#!/usr/bin/env bash
# Installs the third-party limiters that tests/real_limiters.rs and
# scenarios/limits.toml, scenarios/rate-limiter-flexible.toml run, next to
# their servers, at the pinned versions; does nothing when they are there:
#
#   pylib/         limits, redis-py and their dependencies (PyPI, requirements.txt),
#                  pip install --target; the servers run with PYTHONPATH=pylib
#   node_modules/  rate-limiter-flexible (npm, package-lock.json), npm ci
#
# Needs python3 with pip, and node with npm (.ci/run installs them when
# missing). Both folders are git-ignored.
set -euo pipefail
cd "$(dirname "$0")"

limits=$(sed -n 's/^limits==//p' requirements.txt)
redis=$(sed -n 's/^redis==//p' requirements.txt)
if PYTHONPATH=pylib python3 -c "import sys, limits, redis
sys.exit(limits.__version__ != '$limits' or redis.__version__ != '$redis')" 2>/dev/null; then
  echo "limits $limits, redis-py $redis: installed (scripts/limiters/pylib)"
else
  echo "== installing limits $limits and redis-py $redis into scripts/limiters/pylib"
  rm -rf pylib
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-input --target pylib -r requirements.txt
fi

locked() {
  node -e "const l = require('./package-lock.json').packages['node_modules/rate-limiter-flexible'];
    let v = null; try { v = require('rate-limiter-flexible/package.json').version } catch {}
    if (v !== l.version) process.exit(1); console.log(v)"
}
if rlf=$(locked 2>/dev/null); then
  echo "rate-limiter-flexible $rlf: installed (scripts/limiters/node_modules)"
else
  echo "== installing rate-limiter-flexible into scripts/limiters/node_modules"
  npm ci --no-audit --no-fund --loglevel=error
  locked >/dev/null
fi
