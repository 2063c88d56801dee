# Shared by fanout-ratio.sh and webpush-floor.sh (sourced, after `cd` to the repository root):
#   start_fanout_sink   builds FanoutBench unless BINS names builds, starts the nginx sink on $PORT in $OUT/sink,
#                       sets BINS and CA (the sink's certificate) and a trap that stops the sink
start_fanout_sink() {
    mkdir -p "$OUT"
    if [[ -z ${BINS:-} ]]; then
        swift build -c release --product FanoutBench >/dev/null
        BINS=$PWD/.build/release/FanoutBench
    fi
    CA=$(SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh start "$PORT" | tail -1)
    trap 'SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh stop "$PORT" >/dev/null 2>&1 || true' EXIT
}
