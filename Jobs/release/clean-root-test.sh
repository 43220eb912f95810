#!/usr/bin/env bash
# Proves that a release runs where the docs say it does: a bare Debian 12 root (debootstrap minbase) holding
# only the packages of runtime-packages.txt, no Swift toolchain, the release installed as docs/operations.md
# tells an operator (the tarball unpacked, the binary in /usr/local/bin, the user and directories from the
# shipped sysusers.d and tmpfiles.d files, the configuration and key in /etc/clawback), and then, as that
# unprivileged user inside the root: `clawback --version`, `config check`, `migrate` (as a database owner that
# is not a superuser, as on RDS or Cloud SQL), `grants import`, `run` against the App Store simulator and
# `report`, each checked; then the monthly cron line as cron runs it. The systemd units are verified by
# systemd-analyze against the release's binary.
#
#   Jobs/release/clean-root-test.sh TARBALL SIMULATOR_BINARY
#
# Runs inside Jobs/local/throwaway-postgres.sh (it needs DATABASE_URL); as root (debootstrap, chroot, mount).
# The root is made under /tmp and deleted on exit, with everything mounted into it unmounted first.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../local/lib/packages.sh"
source "$here/../local/lib/processes.sh"

[ $# -eq 2 ] || { echo "usage: clean-root-test.sh TARBALL SIMULATOR_BINARY" >&2; exit 64; }
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
simulator=$2
[ "$(id -u)" = 0 ] || { echo "clean-root-test: needs root (debootstrap, chroot, mount)" >&2; exit 77; }
[ -n "${DATABASE_URL:-}" ] || { echo "clean-root-test: run inside Jobs/local/throwaway-postgres.sh" >&2; exit 64; }
ensure_packages debootstrap systemd util-linux

fail() { echo "clean-root-test: FAILED: $*" >&2; exit 1; }
step() { echo "clean-root-test: [${SECONDS}s] $*" >&2; }

root=$(mktemp -d /tmp/clawback-clean-root.XXXXXX)
chmod 0755 "$root"  # it becomes /: every user must traverse it
work=$(mktemp -d /tmp/clawback-clean-root-work.XXXXXX)
server_pid=
syslog_pid=
cleanup() {
    stop_background "$server_pid"
    stop_background "$syslog_pid"
    umount "$root/proc" 2>/dev/null || true
    rm -rf --one-file-system "$root" "$work"
}
trap cleanup EXIT

# Debian's mirror as this machine's apt knows it (deb822 or one-line sources).
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}
packages=$(grep -Ev '^[[:space:]]*(#|$)' "$here/runtime-packages.txt" | paste -sd, -)
step "a minimal Debian 12 root with only $packages (debootstrap from $mirror)"
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
[ ! -e "$root/usr/bin/swift" ] && ! ls "$root"/usr/lib/swift* >/dev/null 2>&1 || fail "the root has a Swift toolchain"
# Without /proc, Swift's CommandLine.arguments is empty inside the root.
mount -t proc proc "$root/proc"

step "installing the release as docs/operations.md says"
name=$(basename "$tarball" .tar.gz)
(cd "$(dirname "$tarball")" && sha256sum --check --quiet "$name.tar.gz.sha256") || fail "the tarball does not match its SHA-256"
tar -xzf "$tarball" -C "$root/opt"
release=/opt/$name
install -m 0755 "$root$release/bin/clawback" "$root/usr/local/bin/clawback"
install -D -m 0644 "$root$release/jobs/systemd/clawback.sysusers" "$root/usr/lib/sysusers.d/clawback.conf"
install -D -m 0644 "$root$release/jobs/systemd/clawback.tmpfiles" "$root/usr/lib/tmpfiles.d/clawback.conf"
systemd-sysusers --root="$root" clawback.conf
systemd-tmpfiles --root="$root" --create clawback.conf
uid=$(awk -F: '$1 == "clawback" { print $3 }' "$root/etc/passwd")
gid=$(awk -F: '$1 == "clawback" { print $4 }' "$root/etc/passwd")
[ -n "$uid" ] && [ "$uid" != 0 ] || fail "sysusers created no unprivileged clawback user"
for directory in /etc/clawback /var/lib/clawback/reports /var/log/clawback; do
    [ -d "$root$directory" ] || fail "tmpfiles did not create $directory"
done

step "the units verify against the release's binary (systemd-analyze verify)"
# The bare root has no systemd (a VM that uses the units has): verify on this machine, in a private mount
# namespace where /usr/local/bin holds only the release's binary, so nothing here is touched.
mkdir -p "$work/units"
cp "$root$release"/jobs/systemd/*.service "$root$release"/jobs/systemd/*.timer "$work/units/"
unshare --mount sh -c 'mount -t tmpfs tmpfs /usr/local/bin && install -m 0755 "$1" /usr/local/bin/clawback && shift &&
    systemd-analyze verify --man=no "$@"' sh "$root/usr/local/bin/clawback" "$work"/units/* >"$work/verify.log" 2>&1 ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify"; }
if [ -s "$work/verify.log" ]; then cat "$work/verify.log" >&2; fail "systemd-analyze verify printed warnings"; fi
install -m 0640 -o 0 -g "$gid" "$root$release/jobs/systemd/clawback.env" "$root/etc/clawback/clawback.env"

step "the App Store simulator and the game's grants, on the host's loopback"
"$simulator" generate --purchases 300 --refund-rate 0.05 --reversal-share 0 --unknown-share 0 --mismatch-share 0 \
    --seed 11 --out "$work/world" >/dev/null
mkfifo "$work/simulator.out"
"$simulator" serve --world "$work/world/world.jsonl" --state "$work/state" --port 0 --rate transactionInfo=1000 \
    >"$work/simulator.out" 2>>"$work/simulator.log" &
server_pid=$!
read -r -t 60 word port <"$work/simulator.out" || { cat "$work/simulator.log" >&2; fail "the simulator did not start"; }
[ "$word" = LISTENING ] || fail "unexpected simulator output: $word"

# A database owner that is not a superuser, with CREATEROLE (clawback_game), as managed PostgreSQL gives.
psql --quiet --no-psqlrc -v ON_ERROR_STOP=1 -c "CREATE ROLE clawback_owner LOGIN CREATEROLE" \
    -c "CREATE DATABASE clawback_release OWNER clawback_owner" >/dev/null
url="postgresql://clawback_owner@127.0.0.1:$PGPORT/clawback_release"
# The owner logs in with a password (SCRAM), read from a file mounted as a Kubernetes Secret is: a link into
# a ..data directory, root-owned, mode 0440, group clawback (fsGroup). libpq's own pgpass check refuses
# such a file; clawback's database.password_file takes it.
password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
# On standard input, not the command line (where the process list would show it).
echo "ALTER ROLE clawback_owner PASSWORD '$password';" | psql --quiet --no-psqlrc -v ON_ERROR_STOP=1 >/dev/null
hba=$CLAWBACK_THROWAWAY_PG_DIR/data/pg_hba.conf
{ echo "host all clawback_owner 127.0.0.1/32 scram-sha-256"; cat "$hba"; } >"$work/pg_hba.conf"
cat "$work/pg_hba.conf" >"$hba"
psql --quiet --no-psqlrc -c "SELECT pg_reload_conf()" >/dev/null
PGPASSWORD=wrong psql --no-psqlrc -h 127.0.0.1 -U clawback_owner -d clawback_release -c "SELECT 1" >/dev/null 2>&1 &&
    fail "the database accepts a wrong password: the password test would prove nothing"
mkdir -p "$root/etc/clawback/db-password/..data"
printf '%s\n' "$password" >"$root/etc/clawback/db-password/..data/password"
chown -R "0:$gid" "$root/etc/clawback/db-password"
chmod 0750 "$root/etc/clawback/db-password" "$root/etc/clawback/db-password/..data"
chmod 0440 "$root/etc/clawback/db-password/..data/password"
ln -s ..data/password "$root/etc/clawback/db-password/password"

# The configuration and key where the docs put them: root-owned, readable by the clawback group only.
key=$(ls "$work/world/keys/")
install -m 0640 -o 0 -g "$gid" "$work/world/keys/$key" "$root/etc/clawback/$key"
install -m 0644 "$work/state/root.pem" "$root/etc/clawback/simulator-root.pem"
install -m 0644 "$work/world/grants.jsonl" "$root/var/lib/clawback/grants.jsonl"
{
    cat <<YAML
apple:
  production_url: http://127.0.0.1:$port
  sandbox_url: http://127.0.0.1:$port/sandbox
  trusted_roots: [/etc/clawback/simulator-root.pem]   # the simulator's root: never for the real App Store
  rate_limits: {transaction_info: 1000}
database:
  url: $url
  password_file: /etc/clawback/db-password/password
reports:
  directory: /var/lib/clawback/reports
run:
  metrics_file: /var/lib/clawback/clawback.prom
YAML
    sed "s|key_file: .*|key_file: /etc/clawback/$key|" "$work/world/clawback-apps.yaml"
} >"$work/clawback.yaml"
install -m 0640 -o 0 -g "$gid" "$work/clawback.yaml" "$root/etc/clawback/clawback.yaml"

# Inside the root, as the clawback user, with nothing of the host's environment.
as_clawback() {
    # shellcheck disable=SC2086 # extra_env: NAME=value words, or nothing
    chroot --userspec="$uid:$gid" "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/var/lib/clawback LANG=C.UTF-8 \
        CLAWBACK_CONFIG=/etc/clawback/clawback.yaml ${extra_env:-} /usr/local/bin/clawback "$@"
}
expect_status() {  # STATUS COMMAND...
    local want=$1
    shift
    set +e
    as_clawback "$@" >"$work/out" 2>"$work/err"
    local got=$?
    set -e
    [ "$got" = "$want" ] || { cat "$work/out" "$work/err" >&2; fail "clawback $* exited $got, expected $want"; }
}

step "clawback --version"
expect_status 0 --version
version=$(sed -n 's/^ *public static let version = "\(.*\)"$/\1/p' "$here/../../Sources/Job/Runtime/BuildInfo.swift")
grep -q "^clawback $version (commit [0-9a-f]\{40\})$" "$work/out" || { cat "$work/out" >&2; fail "--version does not name $version and a commit"; }
if [ -n "${CLAWBACK_RELEASE_COMMIT:-}" ]; then
    grep -q "commit $CLAWBACK_RELEASE_COMMIT" "$work/out" || fail "--version names another commit than $CLAWBACK_RELEASE_COMMIT"
fi
cat "$work/out" >&2

step "clawback run before migrating: refused, naming clawback migrate; with JSON logs, the refusal is a JSON line too"
expect_status 78 run
grep -q "run \`clawback migrate\`" "$work/err" || { cat "$work/err" >&2; fail "the unmigrated database is not named"; }
expect_status 78 run --log-format json
python3 -c '
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
records = [json.loads(line) for line in lines]
assert any(r.get("level") == "error" and r.get("exit_status") == 78 and "clawback migrate" in r.get("msg", "") for r in records), records
' "$work/err" || { cat "$work/err" >&2; fail "with --log-format json, stderr is not JSON lines naming the refusal"; }

step "clawback migrate (as a non-superuser owner), then config check"
expect_status 0 migrate
expect_status 0 config check
grep -q "configuration is fine" "$work/out" || { cat "$work/out" >&2; fail "config check"; }

step "clawback grants import, run, report"
expect_status 0 grants import /var/lib/clawback/grants.jsonl
# The fault suite's crash points are compiled into debug builds only: armed here, the release must not die.
extra_env=CLAWBACK_CRASH_AT=batch.before-commit expect_status 0 run --log-format json
run_out=$(cat "$work/out")
expect_status 0 report
detail=$(find "$root/var/lib/clawback/reports" -name '*-detail.csv' -newer "$work/clawback.yaml" | sort | tail -n 1)
[ -n "$detail" ] || fail "no detail report was written"
expected=$(grep -c '"refund"' "$work/world/world.jsonl" || true)
flagged=$(python3 -c 'import csv,sys; rows=list(csv.DictReader(open(sys.argv[1], encoding="utf-8-sig"))); print(sum(1 for r in rows if r["verdict"] in ("refunded","revoked")))' "$detail")
[ "$flagged" = "$expected" ] && [ "$expected" -gt 0 ] || { echo "$run_out" >&2; fail "the report flags $flagged purchases; Apple refunded $expected"; }
[ -s "$root/var/lib/clawback/clawback.prom" ] || fail "no metrics file"
owner=$(stat -c %u "$detail")
[ "$owner" = "$uid" ] || fail "the report is owned by uid $owner, not clawback's"
step "the monthly cron line, as cron runs it: only JSON lines in its log; a failure reaches syslog"
# syslog inside the root: a datagram socket at /dev/log that writes what logger sends to a file.
python3 - "$root/dev/log" "$work/syslog" <<'PY' &
import os, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)  # as syslog's: every user may send
sock.settimeout(120)
with open(sys.argv[2], "ab", buffering=0) as out:
    try:
        while True:
            out.write(sock.recv(65536) + b"\n")
    except socket.timeout:
        pass
PY
syslog_pid=$!
for attempt in $(seq 50); do [ -S "$root/dev/log" ] && break; sleep 0.1; done
cron_line=$(grep -E '^[0-9]' "$root$release/jobs/cron/clawback.cron")
cron_command=$(python3 -c 'import sys; print(sys.argv[1].split(None, 6)[6])' "$cron_line")
cron_user=$(python3 -c 'import sys; print(sys.argv[1].split(None, 6)[5])' "$cron_line")
[ "$cron_user" = clawback ] || fail "the cron line runs as $cron_user"
as_cron() {
    chroot --userspec="$uid:$gid" "$root" /usr/bin/env -i SHELL=/bin/sh PATH=/usr/local/bin:/usr/bin:/bin HOME=/var/lib/clawback \
        LOGNAME=clawback /bin/sh -c "$cron_command"
}
as_cron || fail "the cron line failed: $(tail -n 5 "$root/var/log/clawback/clawback.log")"
[ -s "$root/var/log/clawback/clawback.log" ] || fail "the cron line wrote no log"
python3 -c '
import json, sys
for number, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    try:
        json.loads(line)
    except ValueError:
        sys.exit(f"line {number} of the cron log is not JSON: {line!r}")
' "$root/var/log/clawback/clawback.log" || fail "the cron log is not JSON lines"
# (libdispatch itself may log a notice there: an unprivileged thread cannot raise its priority.)
! grep -q "exited" "$work/syslog" 2>/dev/null || fail "a successful run was reported as failed: $(cat "$work/syslog")"
step "the daily cron line, as cron runs it: a notified-refunds run, listed by clawback runs"
daily_line=$(grep -E '^[0-9]' "$root$release/jobs/cron/clawback-daily.cron")
daily_command=$(python3 -c 'import sys; print(sys.argv[1].split(None, 6)[6])' "$daily_line")
chroot --userspec="$uid:$gid" "$root" /usr/bin/env -i SHELL=/bin/sh PATH=/usr/local/bin:/usr/bin:/bin HOME=/var/lib/clawback \
    LOGNAME=clawback /bin/sh -c "$daily_command" || fail "the daily cron line failed: $(tail -n 5 "$root/var/log/clawback/daily.log")"
grep -q 'strategy=notified-refunds' "$root/var/log/clawback/daily.log" ||
    fail "the daily cron line's log does not name its strategy: $(tail -n 5 "$root/var/log/clawback/daily.log")"
expect_status 0 runs
grep -q "notified-refunds" "$work/out" || { cat "$work/out" >&2; fail "clawback runs lists no daily run"; }
# The log directory gone (a fresh machine where the install step was skipped): nothing runs, and syslog says so.
rm -rf "$root/var/log/clawback"
as_cron || true  # cron ignores the line's status: what matters is what reached syslog
for attempt in $(seq 50); do [ -s "$work/syslog" ] && break; sleep 0.1; done
grep -q "clawback run exited" "$work/syslog" || fail "the failure did not reach syslog: $(cat "$work/syslog" 2>/dev/null)"
grep -q "<11>" "$work/syslog" || fail "the failure was not logged at user.err: $(cat "$work/syslog")"
stop_background "$syslog_pid"

step "passed: $name runs in a bare Debian 12 root as user clawback; $flagged refunds found and reported"
