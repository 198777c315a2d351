#!/usr/bin/env bash
# Installs the third-party limiters that tests/it/real_limiters.rs and
# scenarios/limits.toml, scenarios/rate-limiter-flexible.toml run, next to
# their servers, at the pinned versions; does nothing when they are there:
#
#   pylib/         limits, redis-py and their dependencies (PyPI, requirements.txt),
#                  pip install --target; the servers run with PYTHONPATH=pylib
#   node_modules/  rate-limiter-flexible, express-rate-limit and express (npm,
#                  package-lock.json), npm ci
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

# Each package at the version package-lock.json pins, or npm ci again.
locked() {
  node -e "const names = ['rate-limiter-flexible', 'express-rate-limit', 'express'];
    const lock = require('./package-lock.json').packages;
    const fs = require('fs');
    const have = names.map((n) => { try { return JSON.parse(fs.readFileSync('node_modules/' + n + '/package.json')).version } catch { return null } });
    if (names.some((n, i) => have[i] !== lock['node_modules/' + n].version)) process.exit(1);
    console.log(names.map((n, i) => n + ' ' + have[i]).join(', '))"
}
if npm_pkgs=$(locked 2>/dev/null); then
  echo "$npm_pkgs: installed (scripts/limiters/node_modules)"
else
  echo "== installing rate-limiter-flexible, express-rate-limit and express into scripts/limiters/node_modules"
  npm ci --no-audit --no-fund --loglevel=error
  locked >/dev/null
fi
