#!/usr/bin/env bash
# Completion estimate accuracy (issue 31): one publish to N devices, its status sampled while it runs, and the
# estimate (`estimatedCompletionAt`) at 25/50/75 % of the devices answered compared with when it really finished.
#
#   bench/eta/run.sh [N] [THROTTLE_PER_MINUTE]     (defaults 100000 and 30000; THROTTLE 0 = unthrottled)
#   bench/eta/run.sh 100000 30000                  the throttled case (100k at 500/s: about 3.5 min)
#   bench/eta/run.sh 1000000 0                     the 1M unthrottled case (SeedDevices and the run take minutes)
#   SERVER_BIN=path/to/push-server bench/eta/run.sh ...   another build
#
# Method: as bench/publish/run.sh: the registry (SQLite) is bulk-loaded with SeedDevices, the release server is
# started with the instance's APNs endpoint overridden to the nginx HTTP/2 sink (bench/apns/nginx-sink.sh, no
# delay), one interests publish is POSTed (with `x_delivery.throttlePerMinute` unless 0), and bench/eta/sample.py
# polls its status every 0.25 s until `finished`. For each of 25/50/75 % it takes the first sample with at least that
# share of devices answered and prints the estimate's error against the actual finish: relative to the time that was
# still left at the sample (|estimated − actual| / (actual − sample time)), and relative to the whole duration.
# Everything runs on 127.0.0.1; it stops the sink and the server by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-100000}
THROTTLE=${2:-30000}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/eta}
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-28643}
HTTP_PORT=${HTTP_PORT:-28680}

if [[ -z ${SERVER_BIN:-} ]]; then swift build -c release --product push-server >/dev/null; fi
swift build -c release --product SeedDevices >/dev/null
BIN=$ROOT/.build/release
source bench/sink-server.sh
dir="$OUT/n$N-t$THROTTLE"
rm -rf "$dir"; mkdir -p "$dir"
SERVER=
trap 'stop_sink_server "$dir"' EXIT
start_sink_server "$dir" "$N" 0
$PY bench/eta/sample.py "http://127.0.0.1:$HTTP_PORT" "$INSTANCE" "$SECRET" "$N" "$THROTTLE" "$dir/samples.jsonl" \
    | tee "$dir/result.txt"
