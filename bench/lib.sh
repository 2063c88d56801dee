# Shared by the wrk benchmarks: build the release server and start it on the example config in $OUT.
#   start_example_server PORT [extra sed expression]   sets SERVER (pid) and a trap that kills it
#   start_wrk_bench NAME TITLE [extra sed expression]  OUT (default bench/out/NAME, emptied), the server on $PORT,
#                                                      the run's header line (cores, load, $D seconds a run)
#   health_reference PATTERN                           the same-run reference: GET /health, wrk -t2 -c64, $D s
# The example instance (INSTANCE, SECRET) has no APNs credentials; logs go to $OUT/server.log at warning level.
# SERVER_BIN runs another build (e.g. a base commit's, for before/after runs) and skips the build, as SKIP_BUILD=1 does.
export INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
export SECRET=example-secret-change-me-0123456789abcdef

start_example_server() {
    local port=$1 extra=${2:-}
    [ -n "${SERVER_BIN:-}${SKIP_BUILD:-}" ] || swift build -c release --product push-server >/dev/null
    sed -e "s/\"port\": 8080/\"port\": $port/" -e "s#./data/push.sqlite#$OUT/push.sqlite#" \
        -e 's/"level": "info"/"level": "warning"/' ${extra:+-e "$extra"} config.example.json > "$OUT/config.json"
    "${SERVER_BIN:-.build/release/push-server}" serve --config "$OUT/config.json" 2>"$OUT/server.log" &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
}

start_wrk_bench() {
    local name=$1 title=$2 extra=${3:-}
    OUT=${OUT:-$PWD/bench/out/$name}
    rm -rf "$OUT"; mkdir -p "$OUT"
    start_example_server "$PORT" "$extra"
    echo "== $title, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), ${D}s per run"
}

health_reference() {
    echo "-- reference: GET /health, wrk -t2 -c64"
    wrk -t2 -c64 -d"${D}s" "http://127.0.0.1:$PORT/health" | grep -E "$1"
}
