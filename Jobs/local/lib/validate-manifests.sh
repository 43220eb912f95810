#!/usr/bin/env bash
# Validates every Kubernetes manifest in Jobs/kubernetes against the Kubernetes API schemas, offline and
# strictly (an unknown field is an error), with kubernetes-validate from PyPI (Jobs/local/lib/tools.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
source "$root/Jobs/local/lib/tools.sh"
ensure_tools
# The oldest Kubernetes the manifests claim (1.29; podFailurePolicy is on by default since 1.26 and GA in
# 1.31, CronJob timeZone GA in 1.27; the 1.27 and 1.28 schemas want onPodConditions on every rule) and the newest.
for version in 1.29 1.37; do
    "$(tools_bin)/kubernetes-validate" --strict --quiet --kubernetes-version "$version" "$root"/Jobs/kubernetes/*.yaml
done
echo "Kubernetes manifests valid against 1.29 and 1.37: $(ls "$root"/Jobs/kubernetes/*.yaml | wc -l) files"
