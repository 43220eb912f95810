#!/usr/bin/env bash
# The demo, on a fresh Debian 12 machine with the Swift toolchain (as root: installs what is missing).
# Generates three months of purchases on both stores: 3,000 on the App Store (about 3% refunded, some
# prorated, some reversed, a few unknown to Apple; 40 refund requests awaiting an answer) and 2,000 on Google
# Play (refunds, chargebacks, partial refunds by amount and by quantity, a few canceled, pending or unknown),
# serves them with the simulator, loads the game's grants into a throwaway PostgreSQL, runs both stores'
# monthly runs, answers Apple's refund requests and Google's chargeback reviews, and prints the summary. Output stays in ./.demo; everything started is
# stopped and deleted at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh
ensure_packages "${CLAWBACK_BUILD_PACKAGES[@]}"

echo "==> building clawback and the App Store simulator" >&2
swift build --product clawback
swift build --product store-simulator
bin=$(swift build --show-bin-path)

demo="$PWD/.demo"
rm -rf "$demo"
mkdir -p "$demo"
echo "==> generating a world: 3,000 purchases over the last three months" >&2
"$bin/store-simulator" generate --purchases 3000 --refund-rate 0.03 --prorated-share 0.3 --reversal-share 0.15 \
    --unknown-share 0.003 --mismatch-share 0.002 --refund-request-share 0.4 --declined-request-share 0.3 \
    --open-refund-requests 40 --undelivered-share 0.1 --seed 42 --out "$demo/world"
echo "==> generating Google Play's side: 2,000 orders over the same months" >&2
"$bin/store-simulator" generate-google --orders 2000 --refund-rate 0.08 --unknown-share 0.003 --seed 42 --out "$demo/world"
echo "==> generating the web shop's Stripe side: 1,500 payments over the same months" >&2
"$bin/store-simulator" generate-stripe --payments 1500 --refund-rate 0.08 --dispute-rate 0.05 --seed 42 --out "$demo/world"

exec Jobs/local/throwaway-postgres.sh -- Jobs/local/lib/demo-run.sh "$bin" "$demo"
