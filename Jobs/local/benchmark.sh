#!/usr/bin/env bash
# clawback's benchmark (not tests: figures). Builds clawback and the simulator in release mode, starts a
# throwaway PostgreSQL, runs the scenarios with the simulator on this machine, prints a table and writes
# the figures as JSON (.bench/results.json). Arguments go to the driver (Jobs/local/benchmark/bench.py):
#   bash Jobs/local/benchmark.sh                 the default scenarios
#   bash Jobs/local/benchmark.sh --full          with the 1,000,000-grant sizes (long)
#   bash Jobs/local/benchmark.sh --only B3       one scenario
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# Asking for the usage builds and starts nothing.
for argument in "$@"; do
    case "$argument" in -h | --help) exec python3 Jobs/local/benchmark/bench.py --help ;; esac
done
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}" "${CLAWBACK_BENCH_PACKAGES[@]}" python3 python3-venv

# B6's baseline: Apple's Python library with its async client (httpx) and psycopg, pinned.
venv=.build-bench/venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import appstoreserverlibrary, httpx, psycopg' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check app-store-server-library==3.1.2 httpx==0.28.1 'psycopg[binary]==3.2.10'
fi
export CLAWBACK_BENCH_PYTHON=$PWD/$venv/bin/python

echo "==> building clawback, the App Store simulator and the database benchmark (release)" >&2
swift build -c release --build-path .build-release --product clawback
swift build -c release --build-path .build-release --product store-simulator
swift build -c release --build-path .build-release --product clawback-db-bench
export CLAWBACK_BENCH_BIN
CLAWBACK_BENCH_BIN=$(swift build -c release --build-path .build-release --show-bin-path)

exec Jobs/local/throwaway-postgres.sh -- python3 Jobs/local/benchmark/bench.py --work .bench "$@"
