#!/usr/bin/env bash
# The demo's second half, inside the throwaway PostgreSQL: start the simulator, write a configuration,
# migrate, import the grants, run, let the game apply the clawbacks, answer Apple's refund requests, run
# again (Apple reversed some refunds), let the game give back, then report owed against recovered. Usage: demo-run.sh BIN_DIR DEMO_DIR
set -euo pipefail
bin=$1
demo=$2
server_pid=
source "$(dirname "${BASH_SOURCE[0]}")/processes.sh"
trap 'stop_background "$server_pid"' EXIT

# The simulator enforces Apple's limits; the demo raises Get Transaction Info to 500/s so it takes seconds.
# Apple decides a refund request some hours after it; the demo's simulator decides 2 s after the answer.
start_simulator() {  # WORLD_FILE
    rm -f "$demo/simulator.out"
    mkfifo "$demo/simulator.out"
    "$bin/store-simulator" serve --world "$1" --google-world "$demo/world/google-world.jsonl" \
        --stripe-world "$demo/world/stripe-world.json" --state "$demo/state" \
        --port "${port:-0}" --rate transactionInfo=500 \
        --decision-delay-after-answer 2 >"$demo/simulator.out" 2>>"$demo/simulator.log" &
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
refund_requests:
  # Every grant of the demo was imported before the run: a purchase without one is answered at once.
  undelivered_after_hours: 0
google:                                # the simulator's Google side instead of Google
  api_url: http://127.0.0.1:$port
  token_url: http://127.0.0.1:$port/google/token
  notifications:                       # the simulator's Pub/Sub subscription for Google's notifications
    subscription: projects/studio-project/subscriptions/clawback
    pubsub_url: http://127.0.0.1:$port
google_apps:
  - package_name: com.studio.game
    service_account_key_file: world/google-service-account.json
    refund_requests: {grants_complete_since: $(date -u -d '1 year ago' +%F)}
stripe:                                # the simulator's Stripe side: the web shop's payments
  api_key_file: world/stripe.key
  api_url: http://127.0.0.1:$port
  shops:
    - name: web.studio.game
YAML
# The demo app asked its players' consent to share consumption data with Apple: refund requests are answered.
# Every grant was imported, so a purchase without one was not delivered.
since=$(date -u -d '1 year ago' +%F)
sed "s/^\(    key_file: .*\)\$/\1\n    refund_requests: {customer_consented: true, grants_complete_since: $since}/" \
    "$demo/world/clawback-apps.yaml" >>"$demo/clawback.yaml"
export CLAWBACK_CONFIG="$demo/clawback.yaml"

echo "==> clawback migrate" >&2
"$bin/clawback" migrate --log-level warning >/dev/null
echo "==> clawback config check" >&2
"$bin/clawback" config check
echo "==> clawback grants import" >&2
"$bin/clawback" grants import "$demo/world/grants.jsonl" --log-level warning
"$bin/clawback" grants import "$demo/world/google-grants.jsonl" --log-level warning
"$bin/clawback" grants import "$demo/world/stripe-grants.jsonl" --log-level warning
echo "==> clawback run: last month's run, which claws back the refunds" >&2
"$bin/clawback" run --log-level warning >"$demo/first-run.txt" || { cat "$demo/first-run.txt"; exit $?; }
grep -E "^(run|status|  refunded|ledger entries created|units clawed back|report) " "$demo/first-run.txt"
echo
# A store's monthly run, its summary into $1: 75 (refunds the store has not settled yet, left unverified until
# they are final) is an answer; anything else but 0 is a failure.
store_run() {
    local out=$1 status
    shift
    set +e
    "$bin/clawback" run "$@" --log-level warning >"$out"
    status=$?
    set -e
    [ "$status" = 0 ] || [ "$status" = 75 ] || { cat "$out"; exit "$status"; }
}

echo "==> clawback google-play sweep-voids: the daily job keeps Google's voided purchases (Google shows 30 days)" >&2
"$bin/clawback" google-play sweep-voids --log-level warning
echo "==> clawback run --strategy google-orders: the month's run of Google Play's grants" >&2
store_run "$demo/google-run.txt" --strategy google-orders --metrics-file "$demo/clawback-google.prom"
grep -E "^(run|status|  refunded|  mismatch|  unknown_to_google|  unverified|ledger entries created|units clawed back) " "$demo/google-run.txt"
echo
echo "==> the game applies them (Jobs/local/lib/demo-game.sql: some wallets short, two players let off)" >&2
psql --quiet --no-psqlrc --file "$(dirname "${BASH_SOURCE[0]}")/demo-game.sql"

echo
echo "==> clawback refund-requests answer: the hourly job answers Apple's open refund requests" >&2
psql --quiet --no-psqlrc --file "$(dirname "${BASH_SOURCE[0]}")/demo-hook.sql"
"$bin/clawback" refund-requests answer --log-level warning >"$demo/refund-requests.txt" || { cat "$demo/refund-requests.txt"; exit 1; }
sleep 3  # the simulator decides; the next hourly run reads Apple's decisions
"$bin/clawback" refund-requests answer --log-level warning >>"$demo/refund-requests.txt" || { cat "$demo/refund-requests.txt"; exit 1; }
psql --no-psqlrc --tuples-only --no-align --field-separator ' ' --command "
    SELECT count(*) FILTER (WHERE state = 'answered'), count(*) FILTER (WHERE answered_at <= deadline),
           count(*) FILTER (WHERE outcome = 'REFUND_DECLINED'), coalesce(sum(units_granted) FILTER (WHERE outcome = 'REFUND_DECLINED'), 0),
           count(*) FILTER (WHERE outcome = 'REFUND')
    FROM clawback.refund_requests WHERE state IN ('answered', 'received', 'sending')" |
while read -r answered in_time declined kept refunded; do
    echo "refund requests answered: $answered ($in_time within Apple's 12 hours); Apple declined $declined ($kept units stay with the players), refunded $refunded"
done

echo
echo "==> clawback google-play notifications: the hourly job reads Google's notifications and answers its chargeback reviews" >&2
"$bin/clawback" google-play notifications --log-level warning >"$demo/google-notifications.txt" || { cat "$demo/google-notifications.txt"; exit 1; }
psql --no-psqlrc --tuples-only --no-align --field-separator ' ' --command "
    SELECT (SELECT count(*) FROM clawback.google_notifications),
           count(*) FILTER (WHERE state = 'answered'), count(*) FILTER (WHERE answered_at <= deadline),
           count(*) FILTER (WHERE answer_preference = 'DECLINE'), count(*) FILTER (WHERE answer_preference = 'APPROVE'),
           count(*) FILTER (WHERE answer_preference = 'NEUTRAL')
    FROM clawback.google_refund_reviews" |
while read -r messages answered in_time decline approve neutral; do
    echo "google notifications kept: $messages; chargeback reviews answered: $answered ($in_time within Google's 24 hours): DECLINE $decline, APPROVE $approve, NEUTRAL $neutral"
done

echo
echo "==> clawback run --strategy stripe-payments: the month's run of the web shop's Stripe payments" >&2
store_run "$demo/stripe-run.txt" --strategy stripe-payments --metrics-file "$demo/clawback-stripe.prom"
grep -E "^(run|status|  refunded|  mismatch|  unknown_to_store|  unverified|ledger entries created|units clawed back) " "$demo/stripe-run.txt"
echo
echo "==> clawback stripe disputes: the hourly job answers the web shop's open disputes with the game's evidence" >&2
"$bin/clawback" stripe disputes --metrics-file "$demo/clawback-stripe-disputes.prom" --log-level warning >"$demo/stripe-disputes.txt" ||
    { cat "$demo/stripe-disputes.txt"; exit 1; }
grep -E "^(disputes read|submitted|left \(policy\)|closed before submitted) " "$demo/stripe-disputes.txt"

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
echo "==> the game gives back what Apple reversed (only what it took)" >&2
psql --quiet --no-psqlrc --file "$(dirname "${BASH_SOURCE[0]}")/demo-game.sql"
echo
echo "==> clawback report: every run of the window, both stores, owed against recovered (summary rows of the recovery section)" >&2
"$bin/clawback" report --log-level warning | tee "$demo/report.txt"
summary=$(grep -- '-summary.csv$' "$demo/report.txt")
printf '%-10s %-9s %-14s %6s %8s %10s\n' product currency figure count units amount
grep -E ',recovery,(owed|recovered|partial|waived|pending|given_back),[^,]*,USD,' "$summary" | while IFS= read -r line; do
    IFS=, read -r _ _ figure _ currency count units amount _ <<<"$line"
    printf '%-10s %-9s %-14s %6s %8s %10s\n' "${line##*,}" "$currency" "$figure" "$count" "$units" "$amount"
done
echo "(every currency and product, with pending ages and give-backs: the summary CSV's recovery section and the HTML page)"
echo
printf '%-12s %-16s %-9s %6s %8s %10s\n' store kind currency count units amount
grep -E ',store,' "$summary" | while IFS= read -r line; do
    IFS=, read -r _ _ kind _ currency count units amount _ <<<"$line"
    printf '%-12s %-16s %-9s %6s %8s %10s\n' "${line##*,}" "$kind" "$currency" "$count" "$units" "$amount"
done
echo
echo "==> clawback runs" >&2
"$bin/clawback" runs --log-level warning
echo
echo "metrics: $demo/clawback.prom, $demo/clawback-google.prom, $demo/clawback-stripe.prom; configuration: $demo/clawback.yaml; exit status of the run: $status"
exit $status
