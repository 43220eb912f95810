#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine with the Swift toolchain (as root: installs what is
# missing). Builds, starts a throwaway PostgreSQL and the HTTPS test server, runs every test against them.
# Extra arguments go to `swift test` (e.g. --filter PostgresTests).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}" "${CLAWBACK_TEST_PACKAGES[@]}"

echo "==> building (debug, with tests)" >&2
swift build --build-tests

echo "==> running the tests against a throwaway PostgreSQL and an nginx HTTPS server" >&2
exec Jobs/local/throwaway-postgres.sh -- Jobs/local/lib/https-test-server.sh -- swift test --skip-build "$@"
