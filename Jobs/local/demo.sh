#!/usr/bin/env bash
# The demo, on a fresh Debian 12 machine with the Swift toolchain (as root: installs what is missing).
# Builds clawback, starts a throwaway PostgreSQL, applies the schema and shows its status. Everything it
# starts is stopped and deleted when it ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}"

echo "==> building clawback" >&2
swift build --product clawback
bin=$(swift build --product clawback --show-bin-path)

echo "==> starting a throwaway PostgreSQL and migrating it" >&2
exec Jobs/local/throwaway-postgres.sh -- bash -c '
    set -e
    "$1/clawback" migrate
    echo
    echo "==> clawback migrate --status"
    "$1/clawback" migrate --status
' demo "$bin"
