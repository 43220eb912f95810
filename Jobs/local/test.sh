#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine with the Swift toolchain (as root: installs what is
# missing). Builds; checks the App Store simulator with Apple's own Python library; then runs every Swift
# test against a throwaway PostgreSQL and an nginx HTTPS server. Extra arguments go to `swift test`
# (e.g. --filter PostgresTests).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}" "${CLAWBACK_TEST_PACKAGES[@]}" python3-venv

echo "==> building (debug, with tests)" >&2
swift build --build-tests
bin=$(swift build --show-bin-path)

echo "==> simulator fidelity, judged by Apple's app-store-server-library" >&2
Tests/Fidelity/run.sh "$bin/appstore-simulator"

echo "==> Swift tests against a throwaway PostgreSQL and an nginx HTTPS server" >&2
exec Jobs/local/throwaway-postgres.sh -- Jobs/local/lib/https-test-server.sh -- swift test --skip-build "$@"
