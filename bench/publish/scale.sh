#!/usr/bin/env bash
# Cost as the work grows (issue 27 item 5): one publish to N devices at N = 10k and 100k (and 1M with --1m: long,
# the seeding alone takes minutes), one server per N, against the nginx HTTP/2 sink answering at once. Prints one
# table: rate, CPU per notification and the server's peak RSS, each with its ratio to the 10k row. The claim to
# check: CPU per notification flat, memory nearly flat (the engine pages targets; nothing per device stays).
#
#   bench/publish/scale.sh [--1m] [--delay MS]      (needs `make deps-bench`: nginx)
#   SERVER_BIN=path/to/push-server bench/publish/scale.sh   measures another build the same way
#
# Method: as bench/publish/run.sh (bench/sink-server.sh: SeedDevices bulk-loads N APNs devices on one interest, the
# release server runs with the instance's APNs endpoint overridden to the sink). Rate = N / (POST to `finished`).
# CPU = the server's utime+stime over that interval (/proc/PID/stat) / N. Peak RSS = the server's VmHWM
# (/proc/PID/status) read after `finished`, before it is stopped: the whole life of the process (start, page
# reads, the fan-out, checkpoints); RSS at start = VmRSS once /health answers, before the publish.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=(10000 100000)
DELAY=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --1m) SIZES+=(1000000) ;;
        --delay) DELAY=$2; shift ;;
        *) echo "usage: $0 [--1m] [--delay MS]" >&2; exit 2 ;;
    esac
    shift
done
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/publish-scale}
mkdir -p "$OUT"
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-28743}
HTTP_PORT=${HTTP_PORT:-28780}
CLK_TCK=$(getconf CLK_TCK)
[[ -n ${SERVER_BIN:-} ]] || swift build -c release --product push-server >/dev/null
swift build -c release --product SeedDevices >/dev/null
BIN=$ROOT/.build/release
source bench/sink-server.sh

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; }

echo "== publish cost by size, sink delay ${DELAY} ms, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
: > "$OUT/rows.txt"
for n in "${SIZES[@]}"; do
    dir="$OUT/$n"
    rm -rf "$dir"; mkdir -p "$dir"
    trap 'stop_sink_server "'"$dir"'"' EXIT
    start_sink_server "$dir" "$n" "$DELAY"
    rss0=$(status_kb "$SERVER" VmRSS)
    c0=$(cpu_ticks "$SERVER"); t0=$(date +%s.%N)
    publish_and_wait
    t1=$(date +%s.%N); c1=$(cpu_ticks "$SERVER")
    hwm=$(status_kb "$SERVER" VmHWM)
    accepted=$(echo "$STATUS" | $PY -c 'import json,sys; print(json.load(sys.stdin)["apns"]["accepted"])')
    stop_sink_server "$dir"
    trap - EXIT
    echo "$n $t0 $t1 $c0 $c1 $rss0 $hwm $accepted $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/rows.txt" | sed 's/^/  raw: /'
done
$PY - "$OUT/rows.txt" "$CLK_TCK" <<'PY'
import sys
hz = int(sys.argv[2])
rows = []
for line in open(sys.argv[1]):
    n, t0, t1, c0, c1, rss0, hwm, accepted, load = line.split()
    n = int(n); wall = float(t1) - float(t0); cpu = (int(c1) - int(c0)) / hz
    rows.append((n, n / wall, cpu * 1e6 / n, int(rss0) / 1024, int(hwm) / 1024, int(accepted), load))
base = rows[0]
print(f"| devices | accepted | rate | CPU per notification | RSS at start | peak RSS | vs {base[0]:,}: rate, CPU/notification, peak RSS | load |")
print("|---|---|---|---|---|---|---|---|")
for n, rate, us, rss0, hwm, accepted, load in rows:
    print(f"| {n:,} | {accepted:,} | {rate:,.0f}/s | {us:.1f} µs | {rss0:.1f} MB | {hwm:.1f} MB | "
          f"{rate / base[1]:.2f}×, {us / base[2]:.2f}×, {hwm / base[4]:.2f}× | {load} |")
PY
