#!/usr/bin/env bash
# The HTTP module's test server: nginx (Debian's nginx-light) on three free ports of 127.0.0.1,
#   plain HTTP/1.1                 CLAWBACK_TEST_HTTP_URL
#   TLS, HTTP/2 + HTTP/1.1 (ALPN)  CLAWBACK_TEST_HTTPS_URL, certificate from a test CA (CLAWBACK_TEST_CA_FILE)
#   TLS with a self-signed cert    CLAWBACK_TEST_WRONG_TLS_URL, which the test CA does not vouch for
# Usage: https-test-server.sh -- CMD [ARG...]   (runs CMD with those variables exported, then stops nginx)
set -euo pipefail
dir=$(mktemp -d /tmp/clawback-nginx.XXXXXX)
chmod 755 "$dir"
mkdir -p "$dir/logs" "$dir/html" "$dir/tmp"
chmod 1777 "$dir/tmp"
nginx_pid=
source "$(dirname "${BASH_SOURCE[0]}")/processes.sh"
cleanup() {
    stop_background "$nginx_pid"
    rm -rf "$dir"
}
trap cleanup EXIT

caller_dir=$PWD
cd "$dir"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=clawback test CA" \
    -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:false\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
    -out server.pem 2>/dev/null
openssl req -x509 "${ec[@]}" -keyout wrong.key -out wrong.pem -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null

printf 'hello\n' > html/hello
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'x' > html/big
head -c $((512 * 1024)) /dev/zero | tr '\0' 'y' > html/slow

for attempt in 1 2 3 4 5 6 7 8; do
    base=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    cat > nginx.conf <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body; proxy_temp_path $dir/tmp/proxy; fastcgi_temp_path $dir/tmp/fcgi;
    uwsgi_temp_path $dir/tmp/uwsgi; scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 100000; http2_max_requests 100000; http2_max_concurrent_streams 256;
    default_type text/plain;
    server {
        listen 127.0.0.1:$base;
        listen 127.0.0.1:$((base + 1)) ssl http2;
        ssl_certificate $dir/server.pem; ssl_certificate_key $dir/server.key;
        root $dir/html;
        location = /echo { return 200 "\$request_method \$content_length \$http_x_clawback_test"; }
        location = /retry-after { add_header Retry-After 7 always; return 429 '{"errorCode":4290000}'; }
        location = /slow { limit_rate 1k; }
    }
    server {
        listen 127.0.0.1:$((base + 2)) ssl http2;
        ssl_certificate $dir/wrong.pem; ssl_certificate_key $dir/wrong.key;
        root $dir/html;
    }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" 2>>"$dir/logs/start.log" &
    nginx_pid=$!
    for _ in $(seq 1 50); do
        [ -s "$dir/nginx.pid" ] && break
        kill -0 "$nginx_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$nginx_pid" 2>/dev/null && [ -s "$dir/nginx.pid" ]; then break; fi
    wait "$nginx_pid" 2>/dev/null || true
    nginx_pid=
done
if [ -z "$nginx_pid" ]; then
    echo "https-test-server: nginx did not start:" >&2
    cat "$dir/logs/start.log" "$dir/logs/error.log" >&2 2>/dev/null || true
    exit 1
fi

export CLAWBACK_TEST_HTTP_URL="http://127.0.0.1:$base"
export CLAWBACK_TEST_HTTPS_URL="https://localhost:$((base + 1))"
export CLAWBACK_TEST_WRONG_TLS_URL="https://localhost:$((base + 2))"
export CLAWBACK_TEST_CA_FILE="$dir/ca.pem"
cd "$caller_dir"
[ "${1:-}" = "--" ] && shift
set +e
"$@"
status=$?
set -e
exit $status
