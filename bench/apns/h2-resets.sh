#!/usr/bin/env bash
# What the third write of each libcurl request is (issue 27): counts, per request, the HTTP/2 frames libcurl asks
# nghttp2 for (uprobes on libnghttp2's nghttp2_submit_request and nghttp2_submit_rst_stream, `perf stat`) while the
# plain C libcurl multi loop sends N requests to the nginx sink, which answers every one 200 with END_STREAM.
# libcurl 7.88.1 resets every stream it has finished (RST_STREAM, STREAM_CLOSED), GET or POST, although nghttp2 has
# closed the stream already: one more 13-byte frame (a TLS record of its own, or the front of the next request's)
# per request, which the sink reads and discards. push-server drives the same libcurl, so it sends the same.
#
#   bench/apns/h2-resets.sh [N]     (default 2000; root and perf from Debian's linux-perf; removes its probes)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
PORT=${SINK_PORT:-28743}
OUT=${OUT:-$PWD/bench/out/h2-resets}
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf"; exit 0; }
gcc -O2 -Wall -Wextra -o "$OUT/curl_multi_loop" bench/apns/curl_multi_loop.c -lcurl
lib=$(ldconfig -p | awk '$1 == "libnghttp2.so.14" { print $NF; exit }')
added=
for fn in nghttp2_submit_request nghttp2_submit_rst_stream; do
    perf probe -l 2>/dev/null | grep -q "probe_libnghttp2:$fn " && continue
    perf probe -q -x "$lib" --add "$fn" && added="$added probe_libnghttp2:$fn"
done
CA=$(SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh start "$PORT" | tail -1)
cleanup() {
    SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh stop "$PORT" >/dev/null 2>&1 || true
    for probe in $added; do perf probe -q -d "$probe" || true; done
}
trap cleanup EXIT
url="https://127.0.0.1:$PORT/3/device/$(printf 'ab%.0s' $(seq 32))"
perf stat -x, -o "$OUT/stat.csv" -e probe_libnghttp2:nghttp2_submit_request,probe_libnghttp2:nghttp2_submit_rst_stream \
    "$OUT/curl_multi_loop" "$url" "$CA" "$N" 6 200 | sed 's/ \[libcurl.*//'
awk -F, -v n="$N" '/nghttp2_submit/ { sub(/.*:/, "", $3); printf "  %s per request: %.3f\n", $3, $1 / n }' "$OUT/stat.csv"
