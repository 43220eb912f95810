# Sourced by the local scripts: installs missing Debian packages, so a fresh Debian 12 machine with the
# Swift toolchain needs nothing done by hand.
# ensure_packages PACKAGE...   installs those not yet installed (apt-get update once, only if needed).

ensure_packages() {
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
        return 1
    fi
    echo "installing ${missing[*]} ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# What compiling clawback needs (the release build and the container's build stage need only these).
CLAWBACK_COMPILE_PACKAGES=(libpq-dev libcurl4-openssl-dev zlib1g-dev pkg-config)
# What building and running clawback locally needs (the demo's PostgreSQL among them).
CLAWBACK_BUILD_PACKAGES=("${CLAWBACK_COMPILE_PACKAGES[@]}" postgresql openssl ca-certificates)
# What the test suite needs on top: a TLS + HTTP/2 server for the HTTP module's tests, headless Chromium
# (with a font) to render the HTML report, systemd-analyze to check the timers and verify the units,
# PgBouncer to run the jobs through a transaction pooler, debootstrap for the clean-root release test, and
# Prometheus for promtool (the alert rules checked and unit-tested).
CLAWBACK_TEST_PACKAGES=(nginx-light chromium fonts-dejavu-core poppler-utils libreoffice-calc-nogui systemd pgbouncer debootstrap prometheus prometheus-pushgateway)
# What the benchmark needs on top of building: nginx, B1's TLS and HTTP/2 proxy in front of the simulator.
CLAWBACK_BENCH_PACKAGES=(nginx-light)
