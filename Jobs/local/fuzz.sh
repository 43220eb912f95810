#!/usr/bin/env bash
# libFuzzer over the parsers of untrusted input (JWS verifier, receipts, Apple's JSON, the CSV writer),
# with AddressSanitizer. Builds the harness into .build-fuzz, seeds each target from Tests/FuzzCorpus and
# Apple's vectors, runs each target for SECONDS (default 30), and copies any crasher into
# Tests/FuzzCorpus/<target>/ (to be fixed, then kept as a regression input replayed by the test suite).
#
#   Jobs/local/fuzz.sh [SECONDS] [TARGET...]      e.g. Jobs/local/fuzz.sh 3600 jws
#
# Exit status 1 when a target crashed or broke a promise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jws receipt apple-json csv)
# Apple's signed vectors, kept in the repository (the same ones the tests read); CLAWBACK_APPLE_VECTORS overrides.
vectors=${CLAWBACK_APPLE_VECTORS:-Tests/Fixtures/apple-vectors}
[ -f "$vectors/manifest.json" ] || { echo "fuzz: Apple's vectors are not at $vectors" >&2; exit 1; }

echo "==> building the fuzz harness (libFuzzer + AddressSanitizer)" >&2
# lld: the gold linker fails on sanitizer objects. -DFUZZING drops the replayer's main for libFuzzer's.
swift build --build-path .build-fuzz --product clawback-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld >&2
harness="$(swift build --build-path .build-fuzz --show-bin-path)/clawback-fuzz"

status=0
total=0
for target in "${targets[@]}"; do
    work=.build-fuzz/work/$target
    mkdir -p "$work/corpus" "$work/artifacts"
    cp -n Tests/FuzzCorpus/"$target"/* "$work/corpus/" 2>/dev/null || true
    case $target in
        jws) find "$vectors" -name '*.jws' -exec cp -n {} "$work/corpus/" \; 2>/dev/null || true ;;
        apple-json) find "$vectors" -name '*.json' -exec cp -n {} "$work/corpus/" \; 2>/dev/null || true ;;
        receipt) find "$vectors" -name '*receipt*' -exec cp -n {} "$work/corpus/" \; 2>/dev/null || true ;;
    esac
    rm -f "$work/corpus/.gitkeep"
    echo "==> fuzzing $target for ${seconds}s" >&2
    set +e
    # Swift's own crash backtracer would stall libFuzzer's crash handling.
    CLAWBACK_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 \
        "$harness" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
        "$work/corpus" >"$work/log" 2>&1
    result=$?
    set -e
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' || echo 0)
    total=$((total + ${runs:-0}))
    if [ $result -ne 0 ]; then
        status=1
        echo "fuzz $target: FAILED after ${runs:-?} executions; log $work/log; crashers kept in Tests/FuzzCorpus/$target/" >&2
        tail -n 30 "$work/log" >&2
        for crasher in "$work"/artifacts/*; do [ -e "$crasher" ] && cp "$crasher" Tests/FuzzCorpus/"$target"/; done
    else
        echo "fuzz $target: ${runs} executions, no crash" >&2
    fi
done
echo "fuzz: $total executions over ${#targets[@]} targets, ${seconds}s each" >&2
exit $status
