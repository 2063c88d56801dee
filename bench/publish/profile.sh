#!/usr/bin/env bash
# Where a notification's CPU goes: one publish of N devices against the nginx HTTP/2 sink (answers at once), with
# `perf record -g` attached to the server from the POST to status `finished`.
#
#   bench/publish/profile.sh [N]        (default 50000; needs `make deps-bench` and perf from Debian's linux-perf)
#
# Prints the process's CPU per notification, each thread's share of the samples and the shared objects they fall
# in (libcurl, nghttp2, OpenSSL, libc, the Swift runtime, SQLite, the kernel, push-server itself), then the top
# symbols by self time, demangled, for the sender threads and for the rest (bench/publish/perf_split.py). perf samples on cpu-clock (this VM has no hardware counters); shares hold on a loaded machine, the
# rate does not. Stops by itself; everything runs on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-50000}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/profile}
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-28543}
HTTP_PORT=${HTTP_PORT:-28580}
CLK_TCK=$(getconf CLK_TCK)
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf"; exit 0; }

if [[ -z ${SKIP_BUILD:-} ]]; then
    swift build -c release --product push-server >/dev/null
    swift build -c release --product SeedDevices >/dev/null
fi
BIN=$ROOT/.build/release
source bench/sink-server.sh

rm -rf "$OUT"; mkdir -p "$OUT"
trap 'stop_sink_server "'"$OUT"'"' EXIT
start_sink_server "$OUT" "$N" 0
PID=$SERVER
c0=$(awk '{print $14 + $15}' "/proc/$SERVER/stat"); t0=$(date +%s.%N)
# System-wide, filtered to the server at report time: `-p` misses threads started after it attaches (curl's).
perf record -q -a -g -F 999 -o "$OUT/perf.data" 2>/dev/null &
PERF=$!
sleep 0.3
publish_and_wait
t1=$(date +%s.%N); c1=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
kill -INT $PERF; wait $PERF 2>/dev/null || true
stop_sink_server "$OUT"; trap - EXIT
$PY - "$N" "$t0" "$t1" "$c0" "$c1" "$CLK_TCK" <<'PY'
import sys
n, t0, t1, c0, c1, hz = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
print(f"== push-server n={n}: {(c1 - c0) / hz * 1e6 / n:.1f} us CPU/notification, {n / (t1 - t0):.0f}/s (profiler attached)")
PY
$PY bench/publish/perf_split.py "$OUT/perf.data" "$PID" "${TOP:-30}"
