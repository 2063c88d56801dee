#!/usr/bin/env bash
# Heap allocations per notification of each sender in FanoutBench (issue 27): the process's malloc + calloc +
# realloc calls (bench/swift/alloc/malloc_count.c, LD_PRELOAD) at N1 and N2 notifications per platform, and
# (count(N2) - count(N1)) / (N2 - N1), so start-up, keys and the warm-up cancel out. Unlike CPU time, the count does
# not move with the machine's load, so builds compare exactly.
#
#   bench/swift/alloc-count.sh [BIN...]        (default: this tree's release FanoutBench; PLATFORMS="apns fcm webpush")
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/bench/out/alloc-count}
PORT=${SINK_PORT:-18943}
N1=${N1:-2000}
N2=${N2:-7000}
mkdir -p "$OUT"
gcc -O2 -shared -fPIC -o "$OUT/malloc_count.so" bench/swift/alloc/malloc_count.c
if [[ $# -eq 0 ]]; then
    swift build -c release --product FanoutBench >/dev/null
    set -- "$PWD/.build/release/FanoutBench"
fi
CA=$(SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh start "$PORT" | tail -1)
trap 'SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh stop "$PORT" >/dev/null 2>&1 || true' EXIT
for bin in "$@"; do
    for platform in ${PLATFORMS:-apns fcm webpush}; do
        declare -A count
        for n in "$N1" "$N2"; do
            rm -f "$OUT"/count.*
            ALLOC_COUNT_DIR=$OUT LD_PRELOAD=$OUT/malloc_count.so "$bin" --url "https://127.0.0.1:$PORT" --ca "$CA" \
                -n "$n" --platforms "$platform" > "$OUT/run.txt" 2>&1 &
            pid=$!
            wait $pid
            count[$n]=$(cat "$OUT/count.$pid")
        done
        echo "$bin $platform: $(( (count[$N2] - count[$N1]) / (N2 - N1) )) allocations per notification"
    done
done
