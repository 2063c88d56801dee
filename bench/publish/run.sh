#!/usr/bin/env bash
# Publish fan-out benchmark: N devices on one interest, one publish, time to `finished`, against an APNs-like
# HTTP/2 sink (nginx + echo module) without delay and with 50 ms per answer; in the same run the same N sends by
# the plain C libcurl multi loop (bench/apns/curl_multi_loop.c, the server's window: 6 connections x 200 streams)
# and by aioapns 4.0 (Python) against the same sink, as the reference ratios. Each sender's write syscalls per
# request and the sink's reads and CPU per request are printed beside it (bench/apns/sink-syscalls.sh).
# Then the Go peer (bench/apns/gopeer: an APNs sender driven the way gorush drives apns2, on the same x/net HTTP/2
# transport; a stand-in, not apns2 itself) sends N to N distinct tokens read from a file, at gorush's default window
# (1 client, 100 pushes in flight) and at the server's (6 clients x 200), with ratios to push-server and the C loop;
# skipped with a message where Go or Debian's golang-golang-x-net-dev is missing. Then apns2 itself (bench/apns/apns2peer:
# github.com/sideshow/apns2 v0.25.0 unmodified, driven as gorush drives it) at the same two windows; Debian does not
# package apns2, so it needs its source (APNS2_SRC=<a clone>, or GitHub reachable) and is skipped with a message
# otherwise.
#
#   bench/publish/run.sh [N]            (default 100000; needs `make deps-bench`)
#   AIOAPNS=0 bench/publish/run.sh N    skips aioapns (slow: ~0.4 ms of CPU per notification)
#   SERVER_BIN=path/to/push-server bench/publish/run.sh   measures another build (e.g. an older commit) the same way
#   SEED_BIN=path/to/SeedDevices …      seeds with that build's SeedDevices (an older server refuses a newer schema;
#                                       with SEED_CACHE give each build a cache of its own)
#   GOPEER=0 bench/publish/run.sh N    skips the Go peer; APNS2=0 skips the apns2 peer
#   APNS2_SRC=~/src/apns2 bench/publish/run.sh N   builds the apns2 peer from that clone (bench/apns/apns2peer/build.sh)
#   bench/publish/rounds.sh [rounds] [N...]   runs this several times and prints medians and ratios per sender
#   SEED_CACHE=/tmp/seed bench/publish/run.sh N   seeds N devices once and copies that database for every case and
#                                       later run (base and branch alternated start from the same rows, minutes sooner)
#   PROBES=1 bench/publish/run.sh N     also counts each sender's malloc and curl_multi_perform calls per request
#                                       (uprobes on libc and libcurl, set up here and removed at the end; each call
#                                       then traps, so the CPU figures of such a run are inflated: read the counts)
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

if [[ -z ${SKIP_BUILD:-} ]]; then  # SKIP_BUILD=1: use the release binaries as they are (another build may hold .build)
    [[ -n ${SERVER_BIN:-} ]] || swift build -c release --product push-server >/dev/null
    swift build -c release --product SeedDevices >/dev/null
fi
mkdir -p bench/out
gcc -O2 -Wall -Wextra -o bench/out/curl_multi_loop bench/apns/curl_multi_loop.c -lcurl
GOPEER_BIN=
if [[ ${GOPEER:-1} != 0 ]]; then
    GOPEER_BIN=$(bench/apns/gopeer/build.sh 2>"$OUT/gopeer-build.err" | tail -1) || { GOPEER_BIN=; cat "$OUT/gopeer-build.err"; }
    [[ -n $GOPEER_BIN ]] && echo "Go peer: $(go version | cut -d' ' -f3), golang.org/x/net $(dpkg-query -W -f='${Version}' golang-golang-x-net-dev 2>/dev/null)"
fi
APNS2_BIN=
if [[ ${APNS2:-1} != 0 ]]; then
    APNS2_BIN=$(bench/apns/apns2peer/build.sh 2>"$OUT/apns2-build.err" | tail -1) || { APNS2_BIN=; cat "$OUT/apns2-build.err"; }
    [[ -n $APNS2_BIN ]] && echo "apns2 peer: apns2 v0.25.0 (its vendored golang.org/x/net), $(go version | cut -d' ' -f3)"
fi
[[ -z $GOPEER_BIN$APNS2_BIN ]] || awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "%064x\n", i }' > "$OUT/tokens.txt"
SYSCALLS=bench/apns/sink-syscalls.sh
[[ $(id -u) == 0 ]] && command -v perf >/dev/null || SYSCALLS=true  # the syscall counts need perf and root
ADDED_PROBES=
if [[ ${PROBES:-0} != 0 && $SYSCALLS != true ]]; then
    lib() { ldconfig -p | awk -v name="$1" '$1 == name { print $NF; exit }'; }
    for probe in "libc.so.6 malloc probe_libc:malloc" "libcurl.so.4 curl_multi_perform probe_libcurl:curl_multi_perform"; do
        set -- $probe
        perf probe -l 2>/dev/null | grep -q "$3 " && continue
        perf probe -q -x "$(lib "$1")" --add "$2" && ADDED_PROBES="$ADDED_PROBES $3"
    done
fi
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
    $SYSCALLS start "$dir/sink" "$dir/syscalls" "$SERVER"
    c0=$(cpu_ticks $SERVER); t0=$(date +%s.%N)
    publish_and_wait
    t1=$(date +%s.%N); c1=$(cpu_ticks $SERVER)
    $SYSCALLS stop "$dir/syscalls" "$N" | sed 's/^/  /' | tee "$dir/server-syscalls.txt"
    kill -TERM $SERVER; wait $SERVER || true; SERVER=
    local accepted
    accepted=$(echo "$STATUS" | $PY -c 'import json,sys; print(json.load(sys.stdin)["apns"]["accepted"])')
    $PY - "$N" "$t0" "$t1" "$c0" "$c1" "$CLK_TCK" "$accepted" "$label" <<'PY' | tee "$dir/server.txt"
import sys
n, t0, t1, c0, c1, hz, accepted, label = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
wall, cpu = t1 - t0, (c1 - c0) / hz
print(f"push-server [{label}] n={n}: accepted {accepted}, {n / wall:.0f} notifications/s, {cpu * 1e6 / n:.1f} us CPU/notification (wall {wall:.2f} s, cpu {cpu:.2f} s)")
PY
    local url="https://127.0.0.1:$SINK_PORT/3/device/$(printf 'ab%.0s' $(seq 32))" loop
    CURL_LOOP_PAUSE_MS=1000 bench/out/curl_multi_loop "$url" "$CA" "$N" 6 200 > "$dir/curl-loop.raw" & loop=$!
    $SYSCALLS start "$dir/sink" "$dir/syscalls" "$loop"
    wait $loop || true
    sed 's/ \[libcurl.*//' "$dir/curl-loop.raw" | tee "$dir/curl-loop.txt"
    $SYSCALLS stop "$dir/syscalls" "$N" | sed 's/^/  /' | tee "$dir/curl-loop-syscalls.txt"
    if [[ ${AIOAPNS:-1} != 0 ]]; then
        $PY bench/apns/aioapns_bench.py --port "$SINK_PORT" --ca "$CA" --n "$N" | tee "$dir/aioapns.txt"
    fi
    local name bin shape peer
    for name in gopeer apns2; do  # gorush's default window (1 x 100), then the server's (6 x 200)
        bin=$GOPEER_BIN; [[ $name == apns2 ]] && bin=$APNS2_BIN
        [[ -n $bin ]] || continue
        for shape in 1x100 6x200; do
            GOPEER_PAUSE_MS=1000 "$bin" "$url" "$CA" "$N" "${shape%x*}" "${shape#*x}" "$OUT/tokens.txt" \
                > "$dir/$name-$shape.raw" & peer=$!
            $SYSCALLS start "$dir/sink" "$dir/syscalls" "$peer"
            wait $peer || true
            sed 's/ \[go.*//' "$dir/$name-$shape.raw" | tee "$dir/$name-$shape.txt"
            $SYSCALLS stop "$dir/syscalls" "$N" | sed 's/^/  /' | tee "$dir/$name-$shape-syscalls.txt"
        done
    done
    stop_sink_server "$dir"
    trap - EXIT
    $PY - "$dir" <<'PY'
import os, re, sys
def figures(name):
    path = os.path.join(sys.argv[1], name)
    if not os.path.exists(path): return None
    text = open(path).read()
    return float(re.search(r"([0-9.]+) notifications/s", text).group(1)), float(re.search(r"([0-9.]+) us CPU/notification", text).group(1))
ours = figures("server.txt")
for label, name in (("C libcurl loop", "curl-loop.txt"), ("aioapns", "aioapns.txt")):
    ref = figures(name)
    if ref: print(f"  push-server / {label}: rate {ours[0] / ref[0]:.2f}x, CPU per notification {ours[1] / ref[1]:.2f}x")
PY
    $PY - "$dir" <<'PY'
import os, re, sys
def figures(name):
    path = os.path.join(sys.argv[1], name)
    if not os.path.exists(path) or "notifications/s" not in open(path).read(): return None
    text = open(path).read()
    return float(re.search(r"([0-9.]+) notifications/s", text).group(1)), float(re.search(r"([0-9.]+) us CPU/notification", text).group(1))
for peer, peer_name in (("Go peer 1 x 100", "gopeer-1x100.txt"), ("Go peer 6 x 200", "gopeer-6x200.txt"),
                        ("apns2 1 x 100", "apns2-1x100.txt"), ("apns2 6 x 200", "apns2-6x200.txt")):
    ref = figures(peer_name)
    for label, name in (("push-server", "server.txt"), ("C libcurl loop", "curl-loop.txt")):
        ours = figures(name)
        if ref and ours: print(f"  {label} / {peer}: rate {ours[0] / ref[0]:.2f}x, CPU per notification {ours[1] / ref[1]:.2f}x")
PY
}

echo "== publish fan-out, N=$N, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
run_case 0 fast
run_case 50 delay50ms
for probe in $ADDED_PROBES; do perf probe -q -d "$probe"; done
