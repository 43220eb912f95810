#!/usr/bin/env bash
# clawback's benchmark (not tests: figures). Builds clawback and the simulator in release mode, starts a
# throwaway PostgreSQL, runs the scenarios with the simulator on this machine, prints a table and writes
# the figures as JSON (.bench/results.json). Arguments go to the driver (Jobs/local/benchmark/bench.py):
#   bash Jobs/local/benchmark.sh                 the default scenarios
#   bash Jobs/local/benchmark.sh --full          with the 1,000,000-grant sizes (long)
#   bash Jobs/local/benchmark.sh --only B3       one scenario
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}" python3

echo "==> building clawback and the App Store simulator (release)" >&2
swift build -c release --build-path .build-release --product clawback
swift build -c release --build-path .build-release --product appstore-simulator
export CLAWBACK_BENCH_BIN
CLAWBACK_BENCH_BIN=$(swift build -c release --build-path .build-release --show-bin-path)

exec Jobs/local/throwaway-postgres.sh -- python3 Jobs/local/benchmark/bench.py --work .bench "$@"
