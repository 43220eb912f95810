#!/usr/bin/env bash
# Builds a release: dist/clawback-VERSION-linux-ARCH.tar.gz and its .sha256, holding
#   bin/clawback            the release binary, the Swift runtime and Foundation linked in statically: it
#                           needs only the Debian 12 packages in runtime-packages.txt
#   jobs/                   cron, systemd (with sysusers.d and tmpfiles.d files) and Kubernetes definitions
#   clawback.example.yaml   the example configuration
#   docs/, README.md, CHANGELOG.md, LICENSE, runtime-packages.txt
#
# In a git checkout it builds exactly the committed HEAD, exported with `git archive` (which also records the
# commit in the binary: `clawback --version`); uncommitted changes are not in a release, and it says so. Run
# outside git (the container build, whose context is a `git archive`), it builds the tree as it is.
#
#   bash Jobs/release/build.sh [--out DIR]     (default DIR: ./dist)
set -euo pipefail
caller=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Jobs/local/lib/packages.sh

out=$PWD/dist
while [ $# -gt 0 ]; do
    case "$1" in
        # Relative to the caller's directory, as a user expects.
        --out) out=$(cd "$caller" && mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
        *) echo "usage: build.sh [--out DIR]" >&2; exit 64 ;;
    esac
done
ensure_packages "${CLAWBACK_COMPILE_PACKAGES[@]}"
scratch=$PWD/.build-release

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
        echo "build.sh: the working tree has uncommitted changes; the release is built from HEAD without them" >&2
    fi
    source_dir=$scratch/source
    rm -rf "$source_dir"
    mkdir -p "$source_dir"
    git archive --format=tar HEAD | tar -x -C "$source_dir"
    # Timestamps for a repeatable tarball: the commit's, not the build's.
    stamp=$(git log -1 --format=%ct HEAD)
else
    source_dir=$PWD
    stamp=$(date +%s)
fi
# The version of the source that is built (HEAD's), not of the working tree.
version=$(sed -n 's/^ *public static let version = "\(.*\)"$/\1/p' "$source_dir/Sources/Job/Runtime/BuildInfo.swift")
[ -n "$version" ] || { echo "build.sh: no version in Sources/Job/Runtime/BuildInfo.swift" >&2; exit 70; }
arch=$(uname -m)
name=clawback-$version-linux-$arch

echo "==> building clawback $version (release, Swift runtime linked statically)" >&2
# The build's output goes to stderr: stdout's one line is the tarball's path, for scripts.
swift build -c release --static-swift-stdlib --product clawback --package-path "$source_dir" --scratch-path "$scratch/build" >&2
binary=$(swift build -c release --package-path "$source_dir" --scratch-path "$scratch/build" --show-bin-path)/clawback

stage=$scratch/stage/$name
rm -rf "$scratch/stage"
mkdir -p "$stage/bin" "$stage/jobs"
install -m 0755 "$binary" "$stage/bin/clawback"
strip --strip-unneeded "$stage/bin/clawback" 2>/dev/null || true
cp -R "$source_dir/Jobs/cron" "$source_dir/Jobs/systemd" "$source_dir/Jobs/kubernetes" "$source_dir/Jobs/container" "$stage/jobs/"
cp "$source_dir/Jobs/clawback.example.yaml" "$source_dir/Jobs/release/runtime-packages.txt" "$stage/"
cp -R "$source_dir/docs" "$stage/docs"
cp "$source_dir/README.md" "$source_dir/CHANGELOG.md" "$source_dir/LICENSE" "$stage/"

# What the binary links beyond glibc must come from runtime-packages.txt; a Swift runtime library here
# means the static linking did not happen.
if ldd "$stage/bin/clawback" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|not found' >&2; then
    echo "build.sh: the binary still needs the Swift toolchain's libraries (above)" >&2
    exit 70
fi

# The fault suite's crash points exist in debug builds only (Package.swift): a release that could read
# CLAWBACK_CRASH_AT could be made to kill itself mid-commit.
if grep -q CLAWBACK_CRASH_AT "$stage/bin/clawback"; then
    echo "build.sh: the release binary carries the test-only crash points" >&2
    exit 70
fi

mkdir -p "$out"
rm -f "$out"/clawback-*-linux-"$arch".tar.gz "$out"/clawback-*-linux-"$arch".tar.gz.sha256
tarball=$out/$name.tar.gz
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$stamp" -C "$scratch/stage" -cf - "$name" | gzip -n >"$tarball"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$tarball"
