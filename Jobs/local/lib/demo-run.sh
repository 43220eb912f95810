#!/usr/bin/env bash
# The demo's second half, inside the throwaway PostgreSQL: start the simulator, write a configuration,
# migrate, import the grants, run, list the runs. Usage: demo-run.sh BIN_DIR DEMO_DIR
set -euo pipefail
bin=$1
demo=$2
server_pid=
source "$(dirname "${BASH_SOURCE[0]}")/processes.sh"
trap 'stop_background "$server_pid"' EXIT

# The simulator enforces Apple's limits; the demo raises Get Transaction Info to 500/s so it takes seconds.
start_simulator() {  # WORLD_FILE
    rm -f "$demo/simulator.out"
    mkfifo "$demo/simulator.out"
    "$bin/appstore-simulator" serve --world "$1" --state "$demo/state" --port "${port:-0}" --rate transactionInfo=500 \
        >"$demo/simulator.out" 2>>"$demo/simulator.log" &
    server_pid=$!
    read -r -t 60 word port <"$demo/simulator.out" || { echo "the simulator did not start:" >&2; cat "$demo/simulator.log" >&2; exit 1; }
    [ "$word" = LISTENING ] || { echo "unexpected simulator output: $word" >&2; exit 1; }
}
stop_simulator() {
    stop_background "$server_pid"
    server_pid=
}

# Last month: Apple has refunded some purchases, and reversed none of those refunds yet.
start_simulator "$demo/world/world-before-reversals.jsonl"

cat >"$demo/clawback.yaml" <<YAML
# Demo configuration: the App Store simulator instead of Apple. The database comes from \$DATABASE_URL.
apple:
  production_url: http://127.0.0.1:$port
  sandbox_url: http://127.0.0.1:$port/sandbox
  trusted_roots: [state/root.pem]      # the simulator's root; never set this for the real App Store
  rate_limits:
    transaction_info: 500
run:
  metrics_file: clawback.prom
reports:
  directory: reports
YAML
cat "$demo/world/clawback-apps.yaml" >>"$demo/clawback.yaml"
export CLAWBACK_CONFIG="$demo/clawback.yaml"

echo "==> clawback migrate" >&2
"$bin/clawback" migrate --log-level warning >/dev/null
echo "==> clawback config check" >&2
"$bin/clawback" config check
echo "==> clawback grants import" >&2
"$bin/clawback" grants import "$demo/world/grants.jsonl" --log-level warning
echo "==> clawback run: last month's run, which claws back the refunds" >&2
"$bin/clawback" run --log-level warning >"$demo/first-run.txt" || { cat "$demo/first-run.txt"; exit $?; }
grep -E "^(run|status|  refunded|ledger entries created|units clawed back|report) " "$demo/first-run.txt"

# This month: Apple reversed some of those refunds after customers disputed them. Same signing chain
# (the state directory), same port.
stop_simulator
start_simulator "$demo/world/world.jsonl"
echo
echo "==> clawback run: this month's run, which gives back what Apple reversed" >&2
set +e
"$bin/clawback" run --log-level warning
status=$?
set -e
echo
echo "==> clawback runs" >&2
"$bin/clawback" runs --log-level warning
echo
echo "metrics: $demo/clawback.prom; configuration: $demo/clawback.yaml; exit status of the run: $status"
exit $status
