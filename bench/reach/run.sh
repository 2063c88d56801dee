#!/usr/bin/env bash
# Reach benchmark: one publish of N devices per platform (APNs, FCM, Web Push, UnifiedPush, HMS) through the real
# server to one local HTTP/2 sink (bench/apns/nginx-sink.sh: APNs 200, FCM and Huawei OAuth tokens and sends, Web
# Push and UnifiedPush 201), in one run, so each sender's throughput and CPU cost sit beside APNs'.
#
#   bench/reach/run.sh [N] [repeats]          default N=20000 per platform, repeats=1
#   PLATFORMS="apns hms" bench/reach/run.sh    a subset (APNs first: the ratios are to it)
#   SERVER_BIN=path/to/push-server …           another build (default .build/release/push-server, made if missing)
#
# Method: the registry is bulk-loaded with SeedDevices (the store's own API): N devices per platform, each platform
# on its own interest; the server starts on it with every platform's endpoint overridden to the sink (its CA
# trusted, 127.0.0.1 allowed for Web Push and UnifiedPush). Per platform, one publish with only that platform's
# section is POSTed and its status polled every 50 ms. Rate = N / (time from the POST to `finished`); CPU = the
# server process's utime+stime over the same interval (/proc/PID/stat) / N. Web Push and UnifiedPush encrypt every
# message (RFC 8291, one fixed receiver key) and sign VAPID per origin; HMS sends 1,000 tokens per request; APNs
# and FCM one request per device. Every window is the default configuration's (webPush.maxInFlightPerService,
# unifiedpush.maxInFlightPerHost: one sink is one host). The sink checks nothing (the strict stand-ins in
# Tests/Support are for behaviour). Not part of `make test`. Everything runs on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
REPEATS=${2:-1}
PLATFORMS=${PLATFORMS:-"apns fcm web unifiedpush hms"}
ROOT=$PWD
PY=$ROOT/.venv/bin/python3
OUT=${OUT:-$ROOT/bench/out/reach}
INSTANCE=8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11
SECRET=bench-secret-0123456789abcdef0123456789
SINK_PORT=${SINK_PORT:-28643}
HTTP_PORT=${HTTP_PORT:-28680}
CLK_TCK=$(getconf CLK_TCK)
BIN=${SERVER_BIN:-$ROOT/.build/release/push-server}

[[ -x $BIN ]] || make release-binary >/dev/null
swift build -c release --product SeedDevices >/dev/null

rm -rf "$OUT"; mkdir -p "$OUT"
SERVER=
cleanup() {
    [[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
    SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh stop "$SINK_PORT" >/dev/null 2>&1 || true
}
trap cleanup EXIT
CA=$(SINK_DIR="$OUT/sink" bench/apns/nginx-sink.sh start "$SINK_PORT" | tail -1)
SINK=https://127.0.0.1:$SINK_PORT

# Credentials the sink never checks, in the forms the server loads.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$OUT/AuthKey.p8" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$OUT/fcm-key.pem" 2>/dev/null
$PY - "$OUT/fcm-key.pem" "$SINK/token" > "$OUT/service-account.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "sink", "private_key_id": "bench",
                  "private_key": open(sys.argv[1]).read(), "client_email": "bench@sink.iam.gserviceaccount.com",
                  "token_uri": sys.argv[2]}))
PY
"$BIN" vapid-keygen "$OUT/vapid.pem" >/dev/null

echo "== reach: N=$N per platform, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (before seeding)"
seed=1
for platform in $PLATFORMS; do
    endpoint=$SINK/push/
    [[ $platform == unifiedpush ]] && endpoint=$SINK/up/
    .build/release/SeedDevices --db "$OUT/push.sqlite" --instance $INSTANCE --interest "reach-$platform" \
        --count "$N" --platform "$platform" --endpoint "$endpoint" --seed $seed | sed 's/^/  /'
    seed=$((seed + 1))
done

cat > "$OUT/config.json" <<JSON
{"listen":{"host":"127.0.0.1","port":$HTTP_PORT},"storage":{"path":"$OUT/push.sqlite"},"log":{"level":"${LOG_LEVEL:-notice}"},
 "instances":[{"id":"$INSTANCE","secretKey":"$SECRET",
   "apns":{"teamId":"TEAM123456","keyId":"KEY1234567","keyPath":"$OUT/AuthKey.p8","topic":"com.example.bench",
           "defaultEnvironment":"sandbox","endpointOverride":"$SINK","caFile":"$CA"},
   "fcm":{"serviceAccountFile":"$OUT/service-account.json","endpointOverride":"$SINK","caFile":"$CA"},
   "web":{"vapidKeyFile":"$OUT/vapid.pem","subject":"mailto:bench@example.com","pushServiceHosts":["127.0.0.1:$SINK_PORT"],
          "allowedDestinations":["127.0.0.1"],"caFile":"$CA"},
   "unifiedpush":{"ports":[$SINK_PORT],"allowedDestinations":["127.0.0.1"],"caFile":"$CA"},
   "hms":{"appId":"104433211","clientSecret":"bench","endpointOverride":"$SINK",
          "tokenEndpointOverride":"$SINK/oauth2/v3/token","caFile":"$CA"}}]}
JSON
"$BIN" serve --config "$OUT/config.json" 2>"$OUT/server.log" &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break; sleep 0.1; done

section() {  # the publish body's platform section: a notification of a typical size
    case $1 in
        apns) echo '{"aps":{"alert":{"title":"Benchmark","body":"A notification body of a typical size."},"sound":"default"}}' ;;
        *) echo '{"notification":{"title":"Benchmark","body":"A notification body of a typical size."}}' ;;
    esac
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
api=http://127.0.0.1:$HTTP_PORT/publish_api/v1/instances/$INSTANCE/publishes
: > "$OUT/results.txt"
for run in $(seq "$REPEATS"); do
    for platform in $PLATFORMS; do
        c0=$(cpu_ticks $SERVER); t0=$(date +%s.%N)
        publish=$(curl -sf -X POST "$api/interests" -H "Authorization: Bearer $SECRET" -H 'Content-Type: application/json' \
            -d "{\"interests\":[\"reach-$platform\"],\"$platform\":$(section "$platform")}" \
            | $PY -c 'import json,sys; print(json.load(sys.stdin)["publishId"])')
        while :; do
            status=$(curl -sf "$api/$publish" -H "Authorization: Bearer $SECRET")
            [[ $status == *'"status":"finished"'* || $status == *'"status":"failed"'* ]] && break
            sleep 0.05
        done
        t1=$(date +%s.%N); c1=$(cpu_ticks $SERVER)
        echo "$status" > "$OUT/status-$platform-$run.json"
        echo "$run $platform $N $t0 $t1 $c0 $c1 $CLK_TCK $OUT/status-$platform-$run.json" >> "$OUT/results.txt"
    done
done
echo "   load average $(cut -d' ' -f1-3 /proc/loadavg) (after the publishes)"
$PY - "$OUT/results.txt" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    run, platform, n, t0, t1, c0, c1, hz, path = line.split()
    status = json.load(open(path))
    n, wall, cpu = int(n), float(t1) - float(t0), (int(c1) - int(c0)) / int(hz)
    counts = status.get(platform, {})
    rows.append((int(run), platform, n, wall, cpu, counts.get("accepted", 0), counts.get("failed", 0), status["status"]))
base = {}
for run, platform, n, wall, cpu, accepted, failed, state in rows:
    rate, us = n / wall, cpu * 1e6 / n
    if platform == "apns":
        base[run] = (rate, us)
    ratio = ""
    if run in base:
        ratio = f"; vs APNs: rate {rate / base[run][0]:.2f}x, CPU {us / base[run][1]:.2f}x"
    print(f"run {run} {platform:<11} n={n}: {state}, accepted {accepted}, failed {failed}; {rate:,.0f} devices/s, "
          f"{us:.1f} us CPU/notification (wall {wall:.2f} s, cpu {cpu:.2f} s){ratio}")
PY
