#!/usr/bin/env bash
# Publish intake benchmark with wrk: how many publishes/s the server acknowledges (each one committed to SQLite
# before its 200, group commit shared by concurrent requests), and the latency at a fixed ~1,000 publishes/s.
# Same run reference: GET /health on the same server (the HTTP layer's ceiling without the store).
#
#   bench/publish/intake.sh [seconds]       (default 10; needs wrk: `make deps-bench`)
#
# Method: server with the example config, its per-instance rate limit lifted (no APNs credentials: the interest has no subscribers, so the engine
# finishes each job at once, and the store does its full per-publish work: enqueue, claim, finish), wrk -t2 -c64
# for throughput; for latency wrk -t1 -c10 with a 10 ms think time per connection (≈1,000 requests/s) and
# --latency. Loopback only; stops by itself. Prints the SQLite WAL's size at the end (its peak).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${1:-10}
PORT=${HTTP_PORT:-28680}
. bench/lib.sh
# Lift the per-instance rate limit: this measures the server, not the Beams-compatible 100/s default.
start_wrk_bench intake "publish intake" 's/"requestsPerSecondPerInstance": 100/"requestsPerSecondPerInstance": 1000000/'
health_reference "Requests/sec|Latency|errors"
echo "-- publishes at ~1,000/s, wrk -t1 -c10, 10 ms think time (latency)"
DELAY_MS=10 wrk -t1 -c10 -d"${D}s" --latency -s bench/publish/publish.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|Latency|50%|90%|99%|non-2xx"
echo "-- publishes, wrk -t2 -c64 (throughput)"
wrk -t2 -c64 -d"${D}s" --latency -s bench/publish/publish.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|Latency|50%|99%|non-2xx"
queued=$(curl -s "http://127.0.0.1:$PORT/ready" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checks"]["store"]["queueDepth"])')
echo "-- publishes still queued after the runs: $queued"
# SQLite only truncates the WAL when the last connection closes, so its size now is the longest it was during the runs
# (the store's bound: 8 times the checkpoint threshold of 1,000 pages, 32 MB; docs/OPERATIONS.md).
echo "-- WAL file after the runs (its peak): $(stat -c %s "$OUT/push.sqlite-wal" 2>/dev/null || echo 0) bytes"
kill -TERM $SERVER; wait $SERVER || true
trap - EXIT
