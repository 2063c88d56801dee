#!/usr/bin/env bash
# Device registrations per second through the HTTP API (POST …/devices/apns with a new token each time), with
# wrk -t2 -c64; same-run reference: GET /health on the same server. Each registration is one SQLite write,
# committed before the 200 (group commit shares commits between concurrent requests).
#
# wrk sends everything from 127.0.0.1, one client address, so the per-address limit (50/s by default) would
# measure the limiter instead of the registry: the config raises it, the per-instance device API limit and the
# devices-per-instance cap far above what the run can reach. The limiters stay in the request path (their cost is
# part of the number); only their thresholds are lifted.
#
#   bench/registry/run.sh [seconds]      (default 10; needs wrk)
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${1:-10}
PORT=${HTTP_PORT:-28780}
. bench/lib.sh
start_wrk_bench registry "device registrations" 's/"maxDevicesPerUser": 100/"maxDevicesPerUser": 100, "ipRequestsPerSecond": 1000000, "ipBurst": 10000000, "deviceRequestsPerSecondPerInstance": 1000000, "maxDevicesPerInstance": 1000000000/'
health_reference "Requests/sec"
echo "-- POST /device_api/v1/instances/…/devices/apns (new token each), wrk -t2 -c64"
wrk -t2 -c64 -d"${D}s" --latency -s bench/registry/register.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|50%|99%|non-2xx"
devices=$(sqlite3 "$OUT/push.sqlite" "select count(*) from devices" 2>/dev/null || echo "?")
echo "-- devices stored: $devices"
kill -TERM $SERVER; wait $SERVER || true
trap - EXIT
