#!/usr/bin/env bash
# The HTTP/2 TLS sink of the APNs and fan-out benchmarks (bench/apns, bench/publish, bench/swift/FanoutBench), on
# nginx + Debian's echo module: it reads each whole request body, optionally waits, then answers as the real service
# does on success: APNs paths 200 with headers only (END_STREAM on HEADERS, no DATA frame), `/token` an OAuth2 token
# (FCM's token endpoint), `…/messages:send` 200 with a message name (FCM v1), `/push/…` 201 (a Web Push service),
# `/up/…` 201 (a UnifiedPush server), `/oauth2/v3/token` a Huawei OAuth token and `/v1/<appId>/messages:send` Huawei's
# success code 80000000 (HMS Push Kit v1).
# It checks nothing: it is the fast peer for throughput (the strict stand-ins in Tests/Support are for behaviour).
#
#   bench/apns/nginx-sink.sh start <port> [delay_ms]   prints the CA file to trust (the sink's own cert)
#   bench/apns/nginx-sink.sh stop  <port>
#
# Everything lives in $SINK_DIR (default ${TMPDIR:-/tmp}/apns-sink-<port>): config, pid, logs, temp paths and a
# self-signed P-256 certificate for 127.0.0.1. No system service is touched. WORKERS (default 1) sets
# worker_processes. ACCESS_LOG=<file> logs `<path> <status>` per request (off by default: it costs the sink), so a
# benchmark can count what each device token received.
set -euo pipefail

cmd=${1:-}; port=${2:-}; delay_ms=${3:-0}
[[ "$cmd" =~ ^(start|stop)$ && "$port" =~ ^[0-9]+$ && "$delay_ms" =~ ^[0-9]+$ ]] || {
    echo "usage: $0 start|stop <port> [delay_ms]" >&2; exit 2; }
dir=${SINK_DIR:-${TMPDIR:-/tmp}/apns-sink-$port}
module=/usr/lib/nginx/modules/ngx_http_echo_module.so

if [[ $cmd == stop ]]; then
    # Only the nginx started from this directory's config is stopped (its own pid file).
    if [[ -s $dir/nginx.pid ]]; then
        nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -s stop
        for _ in $(seq 50); do [[ -s $dir/nginx.pid ]] || break; sleep 0.1; done
    fi
    exit 0
fi

if ss -ltn "sport = :$port" | grep -q LISTEN; then echo "port $port is already in use" >&2; exit 1; fi
[[ -f $module ]] || { echo "missing $module: apt-get install libnginx-mod-http-echo" >&2; exit 1; }
mkdir -p "$dir/tmp"
if [[ ! -f $dir/cert.pem ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
fi
sleep_line=""
if (( delay_ms > 0 )); then sleep_line="echo_sleep $(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)));"; fi
log_lines="access_log off;"
[[ -n ${ACCESS_LOG:-} ]] && log_lines="log_format sink '\$uri \$status'; access_log $ACCESS_LOG sink buffer=256k flush=1s;"
user_line=""
[[ $(id -u) == 0 ]] && user_line="user root;"   # workers must write the temp paths under $dir

cat > "$dir/nginx.conf" <<CONF
load_module $module;
$user_line
worker_processes ${WORKERS:-1};
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    $log_lines
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    client_body_buffer_size 16k;          # every body (<= 5 KB) stays in memory
    keepalive_timeout 3600s;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $dir/cert.pem;
        ssl_certificate_key $dir/key.pem;
        http2_max_concurrent_streams 1000;
        keepalive_requests 100000000;     # the default 1000 would GOAWAY every 1000 requests
        # Read the body before answering: a plain "return" answers first and nginx then resets the stream.
        location = /token { echo_read_request_body; $sleep_line echo_exec @token; }
        location ~ ^/v1/projects/[^/]+/messages:send\$ { echo_read_request_body; $sleep_line echo_exec @fcm; }
        location ~ ^/v1/[^/]+/messages:send\$ { echo_read_request_body; $sleep_line echo_exec @hms; }
        location = /oauth2/v3/token { echo_read_request_body; $sleep_line echo_exec @hmstoken; }
        location /push/ { echo_read_request_body; $sleep_line echo_exec @webpush; }
        location /up/ { echo_read_request_body; $sleep_line echo_exec @webpush; }
        location / { echo_read_request_body; $sleep_line echo_exec @ok; }
        location @token { default_type application/json; return 200 '{"access_token":"ya29.sink","expires_in":3599,"token_type":"Bearer"}'; }
        location @fcm { default_type application/json; return 200 '{"name":"projects/sink/messages/0:1"}'; }
        location @hms { default_type application/json; return 200 '{"code":"80000000","msg":"Success","requestId":"sink"}'; }
        location @hmstoken { default_type application/json; return 200 '{"access_token":"CgB6e3x9sink","expires_in":3600,"token_type":"Bearer"}'; }
        location @webpush { add_header TTL \$http_ttl always; return 201; }
        # Headers only: a DATA frame on 200 confuses clients that treat any 200 body as an error (aioapns).
        location @ok { add_header apns-id \$http_apns_id always; return 200; }
    }
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -t -q
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
for _ in $(seq 50); do [[ -s $dir/nginx.pid ]] && break; sleep 0.1; done
echo "$dir/cert.pem"
