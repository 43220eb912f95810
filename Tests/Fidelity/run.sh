#!/usr/bin/env bash
# Checks the simulator with Apple's own Python library, its Google Play side with Google's and its Stripe side
# with Stripe's: installs app-store-server-library, google-api-python-client, google-auth and stripe (pinned)
# into a virtualenv, generates a world of each store, starts store-simulator on a free port, and runs the pytest suites.
# Usage: Tests/Fidelity/run.sh PATH_TO_store-simulator
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
simulator=${1:?path to the store-simulator binary}
venv="$root/.build-fidelity/venv"
if ! "$venv/bin/python" -c 'import appstoreserverlibrary, googleapiclient, google.oauth2, google_auth_httplib2, cryptography, pytest, stripe' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check app-store-server-library==3.1.2 pytest \
        google-api-python-client==2.202.0 google-auth==2.62.2 google-auth-httplib2==0.4.4 requests==2.34.2 cryptography==50.0.2 stripe==16.1.0
fi

work=$(mktemp -d /tmp/clawback-fidelity.XXXXXX)
server_pid=
source "$root/Jobs/local/lib/processes.sh"
cleanup() {
    stop_background "$server_pid"
    rm -rf "$work"
}
trap cleanup EXIT

"$simulator" generate --purchases 1500 --refund-rate 0.2 --reversal-share 0.3 --seed 7 \
    --refund-request-share 0.5 --declined-request-share 0.3 --open-refund-requests 20 --out "$work" >/dev/null
"$simulator" generate-google --orders 3000 --refund-rate 0.2 --out "$work" >/dev/null
"$simulator" generate-stripe --payments 1500 --refund-rate 0.3 --dispute-rate 0.1 --out "$work" >/dev/null
mkfifo "$work/out"
"$simulator" serve --world "$work/world.jsonl" --google-world "$work/google-world.jsonl" --stripe-world "$work/stripe-world.json" --state "$work/state" --no-rate-limit \
    >"$work/out" 2>"$work/err" &
server_pid=$!
read -r -t 30 word port <"$work/out" || { echo "the simulator did not start:" >&2; cat "$work/err" >&2; exit 1; }
[ "$word" = LISTENING ] || { echo "unexpected simulator output: $word $port" >&2; exit 1; }

SIMULATOR_URL="http://127.0.0.1:$port" SIMULATOR_WORLD="$work/world.jsonl" SIMULATOR_APPS="$work/apps.json" \
SIMULATOR_ROOT_DER="$work/state/root.der" SIMULATOR_GOOGLE_WORLD="$work/google-world.jsonl" \
SIMULATOR_GOOGLE_KEY="$work/google-service-account.json" \
SIMULATOR_STRIPE_WORLD="$work/stripe-world.json" SIMULATOR_STRIPE_KEY="$work/stripe.key" \
    "$venv/bin/pytest" -q -p no:cacheprovider "$here/test_apple_library.py" "$here/test_google_library.py" \
    "$here/test_stripe_library.py"
