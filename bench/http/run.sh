#!/usr/bin/env bash
# HTTP/1.1 server benchmark: our HTTPServer (bench/swift/HTTPBench, release build) against nginx on the same machine.
#
# Method: both servers answer GET /health with {"status":"ok"} on 127.0.0.1; nginx uses `return 200` with 2 workers,
# access_log off and keepalive_requests 100000000 (a temp config under a temp prefix, foreground process, its own
# pid file; no system nginx service is touched). wrk -t2 -c100 -d10s --latency runs against each alternately,
# PASSES times (default 2), then once against POST /echo (ours only: a JSON route through the Router with a
# handler task). Prints req/s, p50, p99 and the ratio ours/nginx per pass. Everything stops by itself: the
# HTTPBench process exits after its --seconds budget and a trap kills both servers on exit.
#
# Then the real server as users run it: `push-server serve` on config.example.json (only the port and the database
# path changed; access log at info, to a file) against nginx with `access_log` on (to a file, default format), the
# same route, alternately, PASSES times, with each side's CPU per request (utime+stime of its processes / requests).
#
# With TLS=1, one more pass compares HTTPS on keep-alive connections (self-signed P-256 cert made here; both
# servers TLS 1.2+/1.3 with their OpenSSL defaults; wrk does not verify certificates).
#
# Usage: bench/http/run.sh            (env: PASSES=2 DURATION=10s THREADS=2 CONNECTIONS=100 TLS=0 OURS_PORT NGINX_PORT
#                                      REAL_PORT NGINX_LOG_PORT)
set -euo pipefail
cd "$(dirname "$0")/../.."

PASSES=${PASSES:-2}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-100}
OURS_PORT=${OURS_PORT:-18180}
NGINX_PORT=${NGINX_PORT:-18181}
TLS=${TLS:-0}
OURS_TLS_PORT=${OURS_TLS_PORT:-18182}
NGINX_TLS_PORT=${NGINX_TLS_PORT:-18183}
REAL_PORT=${REAL_PORT:-18184}
NGINX_LOG_PORT=${NGINX_LOG_PORT:-18185}

for tool in wrk nginx; do
    command -v "$tool" >/dev/null || { echo "missing $tool (make deps-bench)"; exit 1; }
done

echo "== building HTTPBench and push-server (release)"
swift build -c release --product HTTPBench 2>&1 | tail -1
swift build -c release --product push-server 2>&1 | tail -1

WORK=$(mktemp -d /tmp/httpbench.XXXXXX)
OURS_PID=""
OURS_TLS_PID=""
NGINX_PID=""
REAL_PID=""
cleanup() {
    [ -n "$REAL_PID" ] && kill "$REAL_PID" 2>/dev/null || true
    [ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null || true
    [ -n "$OURS_TLS_PID" ] && kill "$OURS_TLS_PID" 2>/dev/null || true
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/logs" "$WORK/tmp"
TLS_SERVER=""
if [ "$TLS" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" \
        -out "$WORK/cert.pem" -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    TLS_SERVER="server { listen 127.0.0.1:$NGINX_TLS_PORT ssl reuseport; ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem; ssl_protocols TLSv1.2 TLSv1.3;
        location = /health { default_type application/json; return 200 '{\"status\":\"ok\"}'; } }"
fi
cat > "$WORK/nginx.conf" <<NGINX
worker_processes 2;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT reuseport;
        location = /health { default_type application/json; return 200 '{"status":"ok"}'; }
    }
    server {
        listen 127.0.0.1:$NGINX_LOG_PORT reuseport;
        access_log $WORK/logs/access.log;
        location = /health { default_type application/json; return 200 '{"status":"ok"}'; }
    }
    $TLS_SERVER
}
NGINX

# Budget: every wrk run plus slack, so the server stops by itself even if this script is killed.
seconds=${DURATION%s}
budget=$(( (2 * PASSES + 2) * (seconds + 3) * 2 + 30 ))
.build/release/HTTPBench --port "$OURS_PORT" --seconds "$budget" > "$WORK/ours.log" 2>&1 &
OURS_PID=$!
nginx -p "$WORK" -c "$WORK/nginx.conf" > "$WORK/logs/stdout.log" 2>&1 &
NGINX_PID=$!
if [ "$TLS" = 1 ]; then
    .build/release/HTTPBench --port "$OURS_TLS_PORT" --seconds "$budget" --tls-cert "$WORK/cert.pem" \
        --tls-key "$WORK/key.pem" > "$WORK/ours-tls.log" 2>&1 &
    OURS_TLS_PID=$!
fi

sed -e "s/\"port\": 8080/\"port\": $REAL_PORT/" -e "s#./data/push.sqlite#$WORK/push.sqlite#" config.example.json \
    > "$WORK/real.json"
${REAL_BIN:-.build/release/push-server} serve --config "$WORK/real.json" 2> "$WORK/real-access.log" &
REAL_PID=$!

for port in "$OURS_PORT" "$NGINX_PORT" "$REAL_PORT" "$NGINX_LOG_PORT"; do
    for _ in $(seq 50); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "server on $port did not come up"; cat "$WORK"/*.log "$WORK"/logs/*.log; exit 1; }
done

cat > "$WORK/echo.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"interests":["donuts"],"apns":{"aps":{"alert":{"title":"Hello","body":"Hello, world!"}}}}'
wrk.headers["Content-Type"] = "application/json"
LUA

# run_wrk NAME URL [extra wrk args] → prints a line and sets RPS, P50, P99
run_wrk() {
    local name=$1 url=$2
    shift 2
    local out
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$@" "$url")
    RPS=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    P50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    P99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    local errors
    errors=$(grep -E "Socket errors|Non-2xx" <<<"$out" | tr -s ' ' | paste -sd ';' - || true)
    printf "%-8s %-14s req/s %10s   p50 %8s   p99 %8s   %s\n" "$name" "$(basename "$url")" "$RPS" "$P50" "$P99" "${errors:-0 errors}"
}

echo "== wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency, $(nproc) cores shared by servers and wrk"
for pass in $(seq "$PASSES"); do
    echo "-- pass $pass"
    run_wrk ours "http://127.0.0.1:$OURS_PORT/health"
    ours=$RPS
    run_wrk nginx "http://127.0.0.1:$NGINX_PORT/health"
    theirs=$RPS
    echo "   ratio ours/nginx on /health: $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
done
# CPU per request: utime+stime of the server's processes (/proc/PID/stat) over a wrk run / requests served; the
# stable figure on a shared machine. nginx's is its workers'.
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
cpu_per_request() {  # TICKS_BEFORE TICKS_AFTER RPS → µs
    awk -v a="$1" -v b="$2" -v r="$3" -v hz="$CLK_TCK" -v d="${DURATION%s}" 'BEGIN { printf "%.2f", (b - a) / hz * 1e6 / (r * d) }'
}
NGINX_WORKERS=$(pgrep -P "$NGINX_PID" | tr '\n' ' ')
echo "-- the real server (push-server serve, config.example.json, access log at info) vs nginx with access_log on"
for pass in $(seq "$PASSES"); do
    echo "-- pass $pass"
    c0=$(cpu_ticks "$REAL_PID")
    run_wrk real "http://127.0.0.1:$REAL_PORT/health"
    ours=$RPS
    ours_cpu=$(cpu_per_request "$c0" "$(cpu_ticks "$REAL_PID")" "$RPS")
    # shellcheck disable=SC2086
    c0=$(cpu_ticks $NGINX_WORKERS)
    run_wrk nginx+log "http://127.0.0.1:$NGINX_LOG_PORT/health"
    theirs=$RPS
    # shellcheck disable=SC2086
    theirs_cpu=$(cpu_per_request "$c0" "$(cpu_ticks $NGINX_WORKERS)" "$RPS")
    echo "   ratio push-server/nginx (both logging) on /health: $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }');" \
        "CPU per request: push-server $ours_cpu us, nginx $theirs_cpu us"
done
kill -TERM "$REAL_PID"; wait "$REAL_PID" || true; REAL_PID=""   # a clean stop flushes the buffered log
echo "   access log lines written: push-server $(grep -c 'msg="Request completed"' "$WORK/real-access.log"), nginx $(wc -l < "$WORK/logs/access.log")"
echo "-- POST /echo (ours only: JSON parse + re-encode in a handler task)"
run_wrk ours "http://127.0.0.1:$OURS_PORT/echo" -s "$WORK/echo.lua"
if [ "$TLS" = 1 ]; then
    for port in "$OURS_TLS_PORT" "$NGINX_TLS_PORT"; do
        for _ in $(seq 50); do
            curl -sfk "https://127.0.0.1:$port/health" >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    echo "-- HTTPS /health (keep-alive; handshakes only at connection start)"
    run_wrk ours "https://127.0.0.1:$OURS_TLS_PORT/health"
    ours=$RPS
    run_wrk nginx "https://127.0.0.1:$NGINX_TLS_PORT/health"
    echo "   ratio ours/nginx on HTTPS /health: $(awk -v a="$ours" -v b="$RPS" 'BEGIN { printf "%.2f", a / b }')"
fi
