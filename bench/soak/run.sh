#!/usr/bin/env bash
# Soak benchmark (not a test): legitimate traffic alone, then beside an abuser hammering the anonymous routes.
#
#   bench/soak/run.sh [quiet_seconds] [abuse_seconds]     (defaults 120 and 600; needs `make deps-bench`)
#   SOAK_ARGS=--no-abuser bench/soak/run.sh 120 600      (the same schedule without the abuser: a reference run)
#   BACKEND=postgresql SOAK_ARGS=... bench/soak/run.sh 3600 0   (one 60-minute phase on a throwaway PostgreSQL
#                                                                 cluster, bench/soak/cluster.py)
#
# SQLITE_CACHE_MIB sets storage.sqliteCacheMiB (the SQLite writer's page cache, default 64).
# OUT (default bench/out/soak), HTTP_PORT and SINK_PORT let two soaks run side by side; SKIP_BUILD=1 uses the
# release binary as it is (bench/publish's SERVER_BIN likewise: another build to compare).
#
# The server runs with its default limits (only the port, database path and APNs endpoint differ from the example
# config); APNs is the nginx sink (bench/apns/nginx-sink.sh). The abuser (wrk + bench/soak/abuse.lua, ~5,000
# req/s from 127.0.0.1) sends junk registrations, junk interests, forged reporting events and odd methods; the
# legitimate clients (bench/soak/soak.py) come from 127.0.0.5. See soak.py for what is measured.
set -euo pipefail
cd "$(dirname "$0")/../.."
QUIET=${1:-120}
ABUSE=${2:-600}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/soak}
rm -rf "$OUT"; mkdir -p "$OUT"
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=soak-secret-0123456789abcdef-0123456789
SINK_PORT=${SINK_PORT:-28643}
HTTP_PORT=${HTTP_PORT:-28680}
BACKEND=${BACKEND:-sqlite}
SERVER_BIN=${SERVER_BIN:-$ROOT/.build/release/push-server}

[[ -n ${SKIP_BUILD:-} ]] || swift build -c release --product push-server >/dev/null
ca=$(SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh start "$SINK_PORT" 0 | tail -1)
trap 'SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh stop "$SINK_PORT" >/dev/null 2>&1 || true
      if [[ -n ${SERVER:-} ]]; then kill $SERVER 2>/dev/null || true; fi
      if [[ -n ${CLUSTER:-} ]]; then kill $CLUSTER 2>/dev/null || true; wait $CLUSTER 2>/dev/null || true; fi' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$OUT/AuthKey.p8" 2>/dev/null
STORAGE="{\"path\":\"$OUT/push.sqlite\"${SQLITE_CACHE_MIB:+,\"sqliteCacheMiB\":$SQLITE_CACHE_MIB}}"
DB_ARGS=(--db "$OUT/push.sqlite")
if [[ $BACKEND == postgresql ]]; then
    $PY bench/soak/cluster.py "$OUT/pg-url" >"$OUT/cluster.log" 2>&1 &
    CLUSTER=$!
    for _ in $(seq 600); do [[ -f $OUT/pg-url ]] && break; kill -0 $CLUSTER || exit 1; sleep 0.1; done
    url=$(cat "$OUT/pg-url")
    STORAGE="{\"backend\":\"postgresql\",\"postgresql\":{\"connectionString\":\"$url\"}}"
    DB_ARGS=(--db "$OUT/push.sqlite" --pg "$url")
fi
cat > "$OUT/config.json" <<JSON
{"listen":{"host":"127.0.0.1","port":$HTTP_PORT},"storage":$STORAGE,"log":{"level":"notice"},
 "instances":[{"id":"$INSTANCE","secretKey":"$SECRET","apns":{"teamId":"TEAM123456","keyId":"KEY1234567",
   "keyPath":"$OUT/AuthKey.p8","topic":"com.example.soak","defaultEnvironment":"sandbox",
   "endpointOverride":"https://127.0.0.1:$SINK_PORT","caFile":"$ca"}}]}
JSON
"$SERVER_BIN" serve --config "$OUT/config.json" 2>"$OUT/server.log" &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break; sleep 0.1; done
# Ten devices follow `few` (the intake publishes' interest).
for i in $(seq 10); do
    id=$(curl -sf --interface 127.0.0.5 -X POST "http://127.0.0.1:$HTTP_PORT/device_api/v1/instances/$INSTANCE/devices/apns" \
        -H 'Content-Type: application/json' -d "{\"token\":\"$(openssl rand -hex 32)\",\"bundleIdentifier\":\"com.example.app\"}" \
        | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    curl -sf --interface 127.0.0.5 -X POST "http://127.0.0.1:$HTTP_PORT/device_api/v1/instances/$INSTANCE/devices/apns/$id/interests/few" >/dev/null
done
$PY bench/soak/soak.py --port "$HTTP_PORT" --pid "$SERVER" "${DB_ARGS[@]}" --instance "$INSTANCE" \
    --secret "$SECRET" --quiet-seconds "$QUIET" --abuse-seconds "$ABUSE" ${OPS_TOKEN:+--ops-token "$OPS_TOKEN"} ${SOAK_ARGS:-} | tee "$OUT/result.txt"
kill -TERM $SERVER; wait $SERVER || true; SERVER=
