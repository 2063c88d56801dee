#!/usr/bin/env bash
# Publish fan-out benchmark: N devices on one interest, one publish, time to `finished`, against an APNs-like
# HTTP/2 sink (nginx + echo module) without delay and with 50 ms per answer; in the same run the same N sends by
# aioapns 4.0 (Python) against the same sink, as the reference ratio.
#
#   bench/publish/run.sh [N]            (default 100000; needs `make deps-bench`)
#   SERVER_BIN=path/to/push-server bench/publish/run.sh   measures another build (e.g. an older commit) the same way
#
# Method: the registry is bulk-loaded with SeedDevices (the store's own API), the server is started on it with the
# instance's APNs endpoint overridden to the sink, one publish is POSTed, and its status is polled every 50 ms.
# Rate = N / (time from the POST to status `finished`, all results checkpointed). CPU = the server process's
# utime+stime over the same interval (/proc/PID/stat) / N. Stops by itself; everything runs on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-100000}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/publish}
mkdir -p "$OUT"
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-28543}
HTTP_PORT=${HTTP_PORT:-28580}
CLK_TCK=$(getconf CLK_TCK)

swift build -c release --product push-server >/dev/null
swift build -c release --product SeedDevices >/dev/null
BIN=$ROOT/.build/release
source bench/sink-server.sh

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_case() {
    local delay=$1 label=$2
    local dir="$OUT/$label"
    rm -rf "$dir"; mkdir -p "$dir"
    trap 'stop_sink_server "'"$dir"'"' EXIT
    start_sink_server "$dir" "$N" "$delay"
    local c0 t0 t1 c1
    c0=$(cpu_ticks $SERVER); t0=$(date +%s.%N)
    publish_and_wait
    t1=$(date +%s.%N); c1=$(cpu_ticks $SERVER)
    kill -TERM $SERVER; wait $SERVER || true; SERVER=
    local accepted
    accepted=$(echo "$STATUS" | $PY -c 'import json,sys; print(json.load(sys.stdin)["apns"]["accepted"])')
    $PY - "$N" "$t0" "$t1" "$c0" "$c1" "$CLK_TCK" "$accepted" "$label" <<'PY' | tee "$dir/server.txt"
import sys
n, t0, t1, c0, c1, hz, accepted, label = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
wall, cpu = t1 - t0, (c1 - c0) / hz
print(f"push-server [{label}] n={n}: accepted {accepted}, {n / wall:.0f} notifications/s, {cpu * 1e6 / n:.1f} us CPU/notification (wall {wall:.2f} s, cpu {cpu:.2f} s)")
PY
    $PY bench/apns/aioapns_bench.py --port "$SINK_PORT" --ca "$CA" --n "$N" | tee "$dir/aioapns.txt"
    stop_sink_server "$dir"
    trap - EXIT
    $PY - "$dir/server.txt" "$dir/aioapns.txt" <<'PY'
import re, sys
ours = float(re.search(r"([0-9.]+) notifications/s", open(sys.argv[1]).read()).group(1))
ref = float(re.search(r"([0-9.]+) notifications/s", open(sys.argv[2]).read()).group(1))
print(f"  ratio push-server / aioapns: {ours / ref:.1f}x")
PY
}

echo "== publish fan-out, N=$N, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
run_case 0 fast
run_case 50 delay50ms
