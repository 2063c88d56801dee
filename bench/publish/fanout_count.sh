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
cat > "$OUT/wrap.sh" <<W
#!/bin/sh
exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$OUT/callgrind.out.%p "$REAL_BIN" "\$@"
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
stop_sink_server "$OUT"; trap - EXIT
total=$(callgrind_annotate --auto=no "$OUT"/callgrind.out.*.1 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "$LABEL: N=$N, $((t1 - t0)) s under callgrind, $((total / N)) instructions per notification ($OUT)"
