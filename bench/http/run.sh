#!/usr/bin/env bash
# HTTP/1.1 server benchmark: our HTTPServer (Benchmarks/HTTPBench, release build) against nginx on the same machine.
#
# Method: both servers answer GET /health with {"status":"ok"} on 127.0.0.1; nginx uses `return 200` with 2 workers,
# access_log off and keepalive_requests 100000000 (a temp config under a temp prefix, foreground process, its own
# pid file; no system nginx service is touched). wrk -t2 -c100 -d10s --latency runs against each alternately,
# PASSES times (default 2), then once against POST /echo (ours only: a JSON route through the Router with a
# handler task). Prints req/s, p50, p99 and the ratio ours/nginx per pass. Everything stops by itself: the
# HTTPBench process exits after its --seconds budget and a trap kills both servers on exit.
#
# Usage: bench/http/run.sh            (env: PASSES=2 DURATION=10s THREADS=2 CONNECTIONS=100 OURS_PORT NGINX_PORT)
set -euo pipefail
cd "$(dirname "$0")/../.."

PASSES=${PASSES:-2}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-100}
OURS_PORT=${OURS_PORT:-18180}
NGINX_PORT=${NGINX_PORT:-18181}

for tool in wrk nginx; do
    command -v "$tool" >/dev/null || { echo "missing $tool (make deps-bench)"; exit 1; }
done

echo "== building HTTPBench (release)"
swift build -c release --product HTTPBench 2>&1 | tail -1

WORK=$(mktemp -d /tmp/httpbench.XXXXXX)
OURS_PID=""
NGINX_PID=""
cleanup() {
    [ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null || true
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/logs" "$WORK/tmp"
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
}
NGINX

# Budget: every wrk run plus slack, so the server stops by itself even if this script is killed.
seconds=${DURATION%s}
budget=$(( (PASSES + 1) * (seconds + 3) + 30 ))
.build/release/HTTPBench --port "$OURS_PORT" --seconds "$budget" > "$WORK/ours.log" 2>&1 &
OURS_PID=$!
nginx -p "$WORK" -c "$WORK/nginx.conf" > "$WORK/logs/stdout.log" 2>&1 &
NGINX_PID=$!

for port in "$OURS_PORT" "$NGINX_PORT"; do
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
echo "-- POST /echo (ours only: JSON parse + re-encode in a handler task)"
run_wrk ours "http://127.0.0.1:$OURS_PORT/echo" -s "$WORK/echo.lua"
