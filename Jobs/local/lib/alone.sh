#!/usr/bin/env bash
# Runs a command with nothing beside the repository but what the tests are allowed to use: proves that the
# tests need no file outside it, such as a neighbouring checkout.
#
#   Jobs/local/lib/alone.sh -- CMD [ARG...]
#
# CMD runs in a private mount namespace in which the repository's parent directory is a new tmpfs holding
# the repository and the few entries beside it that the suite may use, each bind-mounted back at its own
# path, so every absolute path into them (.build, the paths compiled into the test binaries) stays valid.
# Every other entry of the parent (a sibling checkout, shared files) is invisible. Kept, because the suite
# runs with them and they are not part of any other project: the entries that hold
#   - a directory on PATH or LD_LIBRARY_PATH, and what `swift` and `python3` there resolve to (a toolchain
#     installed under the home directory, pyenv's Python);
#   - the interpreter the repository's virtualenvs link to (.build-tools, .build-fidelity);
#   - the test servers' files and the scratch space (PGHOST, PGBIN, CLAWBACK_THROWAWAY_PG_DIR,
#     CLAWBACK_TEST_CA_FILE, TMPDIR) and the working directory.
# The rest of the filesystem is untouched. The namespace's mounts are private: nothing is mounted or moved in
# the real filesystem (the only trace is an empty directory under a scratch directory, removed before CMD
# starts), and they vanish when CMD exits. Exits as CMD.
#
# A repository at the root (/clawback) has only the system's own directories beside it: CMD then runs as is,
# with a note. Needs mount namespaces: root (CAP_SYS_ADMIN), or unprivileged user namespaces for anyone else
# (CMD then keeps the caller's uid and gid but not their supplementary groups). When they are unavailable it
# fails loudly rather than running CMD without isolation; on such a machine set CLAWBACK_ALONE=off to run
# CMD as is (with a warning), giving up the check. `alone.sh -- true` is that check alone, cheap enough to
# run before a build.
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
fail() { echo "alone: $*; or set CLAWBACK_ALONE=off to run without this check" >&2; exit 70; }
if [ "$parent" = / ]; then
    echo "alone: the repository $repo sits at the root, beside the system's own directories only: nothing to hide" >&2
    exec "$@"
fi
under_repo() { case "$1/" in "$repo"/*) return 0 ;; *) return 1 ;; esac; }

# The entry of the parent (its name) that holds an absolute path, if the path lies beside the repository.
entry_holding() {
    case "$1" in "$parent"/?*) ;; *) return 1 ;; esac
    under_repo "$1" && return 1
    local rest=${1#"$parent"/}
    echo "${rest%%/*}"
}
kept=()
keep_path() {
    local path=$1 name known
    [ -n "$path" ] || return 0
    case "$path" in /*) ;; *) return 0 ;; esac
    for candidate in "$path" "$(readlink -m -- "$path")"; do
        name=$(entry_holding "$candidate") || continue
        for known in "${kept[@]}"; do [ "$known" != "$name" ] || continue 2; done
        kept+=("$name")
    done
}
split_keep() {
    local IFS=:
    for path in $1; do keep_path "$path"; done
}
split_keep "${PATH:-}"
split_keep "${LD_LIBRARY_PATH:-}"
for tool in swift python3; do
    if found=$(command -v "$tool" 2>/dev/null); then keep_path "$found"; fi
done
for venv in "$repo/.build-tools/venv" "$repo/.build-fidelity/venv"; do
    [ -e "$venv/bin/python" ] || [ -L "$venv/bin/python" ] || continue
    keep_path "$(readlink -m -- "$venv/bin/python")"
    home=$(sed -n 's/^home *= *//p' "$venv/pyvenv.cfg" 2>/dev/null || true)
    keep_path "$home"
done
for served in "${PGHOST:-}" "${PGBIN:-}" "${CLAWBACK_THROWAWAY_PG_DIR:-}" "${CLAWBACK_TEST_CA_FILE:-}" "${TMPDIR:-}"; do
    keep_path "$served"
done
caller=$(pwd -P)
keep_path "$caller"
command -v unshare >/dev/null || fail "unshare (util-linux) is not installed: apt-get install util-linux"

# Where the parent's entries are held while it is covered: a directory outside the parent, created and
# removed inside the namespace before CMD starts.
scratch=
for candidate in /tmp /var/tmp /dev/shm; do
    case "$candidate/" in "$parent"/*) continue ;; esac
    if [ -d "$candidate" ] && [ -w "$candidate" ]; then
        scratch=$candidate
        break
    fi
done
[ -n "$scratch" ] || fail "no writable scratch directory outside $parent among /tmp, /var/tmp and /dev/shm"

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
    fail "cannot create a mount namespace (${namespace[*]}): $probe; run as root or enable unprivileged user namespaces"
fi
if [ ${#kept[@]} -gt 0 ] && [ "${CLAWBACK_ALONE_QUIET:-}" != 1 ]; then
    echo "alone: beside the repository in $parent, only these stay visible: ${kept[*]}" >&2
fi

# Inside the namespace: $1 repository, $2 its parent, $3 scratch directory, $4 working directory, $5 and $6
# the caller's uid and gid, $7 the number of kept entries, then their names, then CMD.
inside='
set -euo pipefail
repo=$1 parent=$2 scratch=$3 caller=$4 uid=$5 gid=$6 count=$7
shift 7
kept=("${@:1:count}")
shift "$count"
step() {
    "$@" && return 0
    echo "alone: cannot isolate the repository: \"$*\" failed; set CLAWBACK_ALONE=off to run without this check" >&2
    exit 70
}
mode=$(stat -c %a "$parent")
held=$(step mktemp -d "$scratch/clawback-alone.XXXXXX")
trap '\''umount -R "$held" 2>/dev/null || true; rmdir "$held" 2>/dev/null || true'\'' EXIT
step mount --rbind "$parent" "$held"
step mount -t tmpfs -o "mode=$mode" clawback-alone "$parent"
# Each entry comes back as it was: a symbolic link as a link, a file or a directory mounted at its own path.
for name in "$(basename "$repo")" "${kept[@]}"; do
    if [ -L "$held/$name" ]; then
        step ln -s "$(readlink "$held/$name")" "$parent/$name"
    elif [ -d "$held/$name" ]; then
        step mkdir "$parent/$name"
        step mount --rbind "$held/$name" "$parent/$name"
    elif [ -e "$held/$name" ]; then
        step touch "$parent/$name"
        step mount --bind "$held/$name" "$parent/$name"
    fi
done
step umount -R "$held"
step rmdir "$held"
trap - EXIT
# The proof that isolation holds, checked before CMD runs: the parent holds the repository and the kept
# entries that exist, and nothing else.
listing=$(ls -A "$parent" | sort)
expected=$(for name in "$(basename "$repo")" "${kept[@]}"; do [ -e "$parent/$name" ] || [ -L "$parent/$name" ] && echo "$name"; done | sort)
if [ "$listing" != "$expected" ] || [ ! -f "$repo/Package.swift" ]; then
    echo "alone: the namespace is not as expected: $parent holds: $listing" >&2
    exit 70
fi
cd "$caller"
[ "$uid" = 0 ] || exec unshare --user --map-user="$uid" --map-group="$gid" -- "$@"
exec "$@"
'
exec "${namespace[@]}" -- bash -c "$inside" alone "$repo" "$parent" "$scratch" "$caller" "$uid" "$gid" \
    "${#kept[@]}" "${kept[@]}" "$@"
