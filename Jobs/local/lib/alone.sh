#!/usr/bin/env bash
# Runs a command with nothing beside the repository: proves that the tests need no file outside it.
#
#   Jobs/local/lib/alone.sh -- CMD [ARG...]
#
# CMD runs in a private mount namespace in which the repository's parent directory is an empty tmpfs
# holding only the repository, bind-mounted back at its own path. Sibling directories (a neighbouring
# checkout, shared files) are invisible, while every absolute path inside the repository (its .build
# directory, the paths compiled into the test binaries) stays valid; the rest of the filesystem (/tmp,
# /usr, the home directory) is untouched. The namespace's mounts are private: nothing is mounted or moved
# in the real filesystem (the only trace is an empty directory under /tmp, removed before CMD starts), and
# they vanish when CMD exits. Exits as CMD.
#
# Needs mount namespaces: root (CAP_SYS_ADMIN), or unprivileged user namespaces for anyone else (CMD then
# keeps the caller's uid and gid but not their supplementary groups). When they are unavailable it fails
# loudly rather than running CMD without isolation; on such a machine set CLAWBACK_ALONE=off to run CMD
# as is (with a warning), giving up the check.
set -euo pipefail
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: alone.sh -- CMD [ARG...]" >&2; exit 64; }

case "${CLAWBACK_ALONE:-on}" in
    off)
        echo "alone: CLAWBACK_ALONE=off: running without isolation; files beside the repository stay visible" >&2
        exec "$@"
        ;;
    on) ;;
    *) echo "alone: CLAWBACK_ALONE is '${CLAWBACK_ALONE}'; expected 'off' or unset" >&2; exit 64 ;;
esac

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd -P)
parent=$(dirname "$repo")
fail() { echo "alone: $*; set CLAWBACK_ALONE=off to run without this check" >&2; exit 70; }
[ "$parent" != / ] || fail "the repository $repo sits at the root; there is no parent to empty"
under_parent() { case "$1/" in "$parent"/*) return 0 ;; *) return 1 ;; esac; }
under_repo() { case "$1/" in "$repo"/*) return 0 ;; *) return 1 ;; esac; }
if [ -n "${TMPDIR:-}" ] && under_parent "$TMPDIR" && ! under_repo "$TMPDIR"; then
    fail "TMPDIR=$TMPDIR lies beside the repository and would vanish"
fi
# The test servers' files (the throwaway PostgreSQL's socket, the HTTPS server's CA) are made under /tmp by
# the scripts that wrap this one: a repository cloned directly in /tmp would hide them with its siblings.
for served in "${PGHOST:-}" "${CLAWBACK_TEST_CA_FILE:-}"; do
    if [ -n "$served" ] && under_parent "$served" && ! under_repo "$served"; then
        fail "$served (a test server's file) lies beside the repository and would vanish: clone the repository outside $parent"
    fi
done
caller=$(pwd -P)
if under_parent "$caller" && ! under_repo "$caller"; then
    fail "the working directory $caller lies beside the repository and would vanish"
fi
command -v unshare >/dev/null || fail "unshare (util-linux) is not installed"

# Where the repository is held while its parent is covered: a directory outside the parent, created and
# removed inside the namespace before CMD starts.
scratch=
for candidate in /tmp /var/tmp /dev/shm; do
    if [ -d "$candidate" ] && [ -w "$candidate" ] && ! under_parent "$candidate"; then scratch=$candidate; break; fi
done
[ -n "$scratch" ] || fail "no writable scratch directory outside $parent"

# As anyone but root: a user namespace in which the caller is root, since mount(8) mounts only for root;
# CMD then runs in a nested one under the caller's own uid and gid again (without supplementary groups).
uid=$(id -u) gid=$(id -g)
if [ "$uid" = 0 ]; then
    namespace=(unshare --mount --propagation private)
else
    namespace=(unshare --user --map-root-user --mount --propagation private)
fi

# Namespaces unavailable (no privilege, a container without CAP_SYS_ADMIN, user namespaces disabled) fail here.
if ! probe=$("${namespace[@]}" -- true 2>&1); then
    fail "cannot create a mount namespace (${namespace[*]}): $probe"
fi

# Inside the namespace: $1 repository, $2 its parent, $3 scratch directory, $4 working directory, $5 and $6
# the caller's uid and gid, then CMD.
inside='
set -euo pipefail
repo=$1 parent=$2 scratch=$3 caller=$4 uid=$5 gid=$6
shift 6
step() {
    "$@" && return 0
    echo "alone: cannot isolate the repository: \"$*\" failed; set CLAWBACK_ALONE=off to run without this check" >&2
    exit 70
}
keep=$(step mktemp -d "$scratch/clawback-alone.XXXXXX")
trap '\''umount "$keep" 2>/dev/null || true; rmdir "$keep" 2>/dev/null || true'\'' EXIT
step mount --bind "$repo" "$keep"
step mount -t tmpfs -o mode=755 clawback-alone "$parent"
step mkdir -p "$repo"
step mount --bind "$keep" "$repo"
step umount "$keep"
step rmdir "$keep"
trap - EXIT
# The proof that isolation holds, checked before CMD runs: the parent holds the repository and nothing else.
listing=$(ls -A "$parent")
if [ "$listing" != "$(basename "$repo")" ] || [ ! -f "$repo/Package.swift" ]; then
    echo "alone: the namespace is not as expected: $parent holds: $listing" >&2
    exit 70
fi
cd "$caller"
[ "$uid" = 0 ] || exec unshare --user --map-user="$uid" --map-group="$gid" -- "$@"
exec "$@"
'
exec "${namespace[@]}" -- bash -c "$inside" alone "$repo" "$parent" "$scratch" "$caller" "$uid" "$gid" "$@"
