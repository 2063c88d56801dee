#!/usr/bin/env bash
# Publish fan-out counted, not timed: the release server under `valgrind --tool=callgrind` (started without
# instrumentation), one publish to N devices on the nginx sink answering at once; instrumentation is switched on just
# before the POST and the counts are dumped once the status says `finished` (polled once a second: each status read
# is counted too). Instructions do not move with the machine's load as CPU time does (docs/BENCHMARKS.md, "Fan-out
# CPU per notification against 2247715"); the server's batching still follows its timing, so compare runs of similar
# wall time and read per-function costs beside the total.
#
#   SERVER_BIN=path/to/push-server [SEED_BIN=path/to/SeedDevices] [LABEL=name] bench/publish/fanout_count.sh [N]
#
# N defaults to 5,000 (about 30 s under callgrind). Writes bench/out/fanout-count/LABEL/callgrind.out.PID.1; read it
# with `callgrind_annotate --auto=no [--inclusive=yes] FILE` and divide by N.
#
# The reference, in the same run on the same sink (CLOOP=0 skips it): the plain C libcurl loop
# (bench/apns/curl_multi_loop.c, the server's window of 6 connections x 200 streams, the same N) under callgrind, its
# whole process counted (its set-up too: 1,200 easy handles and six TLS handshakes, as the server's count holds its
# own), printed with the server's ratio to it. The C loop sends tokens it holds in memory and records nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}
LABEL=${LABEL:-$(basename "${SERVER_BIN:?SERVER_BIN=path/to/push-server}")}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-31543}
HTTP_PORT=${HTTP_PORT:-31580}
BIN=$ROOT/.build/release
OUT=$ROOT/bench/out/fanout-count/$LABEL
rm -rf "$OUT"; mkdir -p "$OUT"
REAL_BIN=$SERVER_BIN
PRELOAD=$(bench/valgrind/preload.sh)
cat > "$OUT/wrap.sh" <<W
#!/bin/sh
LD_PRELOAD=$PRELOAD exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$OUT/callgrind.out.%p "$REAL_BIN" "\$@"
W
chmod +x "$OUT/wrap.sh"
source bench/sink-server.sh
SERVER_BIN=$OUT/wrap.sh
trap 'stop_sink_server "'"$OUT"'"' EXIT
start_sink_server "$OUT" "$N" 0
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break; sleep 0.2; done
sleep 2
callgrind_control -i on "$SERVER" >/dev/null
t0=$(date +%s)
# Status read once a second, not every 50 ms: under callgrind (tens of seconds) each read is counted too.
PUBLISH_POLL=1 publish_and_wait
t1=$(date +%s)
callgrind_control -d "$SERVER" >/dev/null
callgrind_control -i off "$SERVER" >/dev/null
if [[ ${CLOOP:-1} != 0 ]]; then
    kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
    SERVER=
    gcc -O2 -Wall -Wextra -o bench/out/curl_multi_loop bench/apns/curl_multi_loop.c -lcurl
    url="https://127.0.0.1:$SINK_PORT/3/device/$(printf 'ab%.0s' $(seq 32))"
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cloop.callgrind" bench/out/curl_multi_loop "$url" "$CA" "$N" 6 200 \
        > "$OUT/cloop.txt" 2> "$OUT/cloop.log"
fi
stop_sink_server "$OUT"; trap - EXIT
count() { callgrind_annotate --auto=no "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
total=$(count "$OUT"/callgrind.out.*.1)
echo "$LABEL: N=$N, $((t1 - t0)) s under callgrind, $((total / N)) instructions per notification ($OUT)"
if [[ ${CLOOP:-1} != 0 ]]; then
    reference=$(count "$OUT/cloop.callgrind")
    $PY -c "import sys; s, c, n = map(int, sys.argv[1:]); print(f'C libcurl loop: {c // n} instructions per notification; server / C loop = {s / c:.2f}')" \
        "$total" "$reference" "$N"
fi
