# Shared by the fan-out benchmarks (bench/publish, bench/eta): N devices bulk-loaded with SeedDevices into
# DIR/push.sqlite, the nginx HTTP/2 sink (bench/apns/nginx-sink.sh) answering after DELAY ms on SINK_PORT, and the
# release server on HTTP_PORT with the instance's APNs endpoint overridden to the sink.
#   start_sink_server DIR N DELAY   needs INSTANCE, SECRET, SINK_PORT, HTTP_PORT and BIN (the release build
#                                   directory, for SeedDevices; SERVER_BIN, if set, is the server measured, and
#                                   SEED_BIN the SeedDevices that writes its database: an older build refuses a
#                                   schema newer than its own, so a base commit's run needs that commit's);
#                                   sets SERVER (the server's pid) and CA (the sink's certificate); with
#                                   SEED_CACHE=dir, N devices are seeded once into dir and copied for each case
#   stop_sink_server DIR            stops the server (unless already stopped) and the sink
#   publish_and_wait                POSTs one APNs publish to the interest `bench` and polls its status every
#                                   50 ms (PUBLISH_POLL seconds) until `finished`; sets STATUS (the last status
#                                   JSON). Needs PY.
start_sink_server() {
    local dir=$1 n=$2 delay=$3
    CA=$(SINK_DIR="$dir/sink" bench/apns/nginx-sink.sh start "$SINK_PORT" "$delay" | tail -1)
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/AuthKey.p8" 2>/dev/null
    if [[ -n ${SEED_CACHE:-} ]]; then
        # SEED_CACHE=dir: seed N devices once into dir and copy that database for each case (seeding 50,000 devices
        # takes a minute on a loaded machine; every copy starts from the same state).
        local seeded="$SEED_CACHE/push-$n.sqlite"
        if [[ ! -f $seeded ]]; then
            mkdir -p "$SEED_CACHE"
            "${SEED_BIN:-$BIN/SeedDevices}" --db "$seeded.tmp" --instance "$INSTANCE" --interest bench --count "$n" | sed 's/^/  /'
            for suffix in "" -wal -shm; do
                if [[ -f $seeded.tmp$suffix ]]; then mv "$seeded.tmp$suffix" "$seeded$suffix"; fi
            done
        fi
        for suffix in "" -wal -shm; do
            if [[ -f $seeded$suffix ]]; then cp "$seeded$suffix" "$dir/push.sqlite$suffix"; fi
        done
    else
        "${SEED_BIN:-$BIN/SeedDevices}" --db "$dir/push.sqlite" --instance "$INSTANCE" --interest bench --count "$n" | sed 's/^/  /'
    fi
    cat > "$dir/config.json" <<JSON
{"listen":{"host":"127.0.0.1","port":$HTTP_PORT},"storage":{"path":"$dir/push.sqlite"},"log":{"level":"${LOG_LEVEL:-notice}"},
 "instances":[{"id":"$INSTANCE","secretKey":"$SECRET","apns":{"teamId":"TEAM123456","keyId":"KEY1234567",
   "keyPath":"$dir/AuthKey.p8","topic":"com.example.bench","defaultEnvironment":"sandbox",
   "endpointOverride":"https://127.0.0.1:$SINK_PORT","caFile":"$CA"}}]}
JSON
    "${SERVER_BIN:-$BIN/push-server}" serve --config "$dir/config.json" 2>"$dir/server.log" &
    SERVER=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break; sleep 0.1; done
}

stop_sink_server() {
    local dir=$1
    if [[ -n ${SERVER:-} ]]; then kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true; fi
    SERVER=
    SINK_DIR="$dir/sink" bench/apns/nginx-sink.sh stop "$SINK_PORT" >/dev/null 2>&1 || true
}

publish_and_wait() {
    local api="http://127.0.0.1:$HTTP_PORT/publish_api/v1/instances/$INSTANCE/publishes" publish
    publish=$(curl -sf -X POST "$api/interests" -H "Authorization: Bearer $SECRET" -H 'Content-Type: application/json' \
        -d '{"interests":["bench"],"apns":{"aps":{"alert":{"title":"Benchmark","body":"A notification body of a typical size."},"sound":"default"}}}' \
        | $PY -c 'import json,sys; print(json.load(sys.stdin)["publishId"])')
    while :; do
        STATUS=$(curl -sf "$api/$publish" -H "Authorization: Bearer $SECRET")
        [[ $STATUS == *'"status":"finished"'* ]] && break
        sleep "${PUBLISH_POLL:-0.05}"
    done
}
