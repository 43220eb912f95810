# Sourced by the local scripts. stop_background PID: stops a background child and reaps it, without ever
# failing: a cleanup must not change a script's exit status (under set -e a failing last command of an
# EXIT trap would).
stop_background() {
    [ -n "${1:-}" ] || return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
