#!/usr/bin/env bash
# Web Push against APNs with the sink's CPU counted (issue 27 item 4): on a machine whose cores the sender and the
# sink share, the rate is bound by the CPU both spend per notification, so the ratio of the rates cannot exceed
#   (APNs' sender CPU + sink CPU per APNs request) / (Web Push sender CPU + sink CPU per Web Push request).
# Per build (alternating, R rounds) FanoutBench runs APNs, then Web Push, each in its own process against one nginx
# sink; the sink worker's CPU (utime + stime from /proc) is read around each run and divided by the requests it
# served (N plus FanoutBench's 1,000-request warm-up). Prints per run the rates, the CPU per notification of sender
# and sink, the rate ratio and that bound, then the medians.
#
#   bench/swift/webpush-floor.sh [R] [N]                                (default 3 rounds of 10,000)
#   BINS="old/FanoutBench new/FanoutBench" bench/swift/webpush-floor.sh 3
#   EXTRA="--webpush-connections-per-host 1" bench/swift/webpush-floor.sh    (extra FanoutBench options, Web Push)
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${1:-3}
N=${2:-10000}
WARMUP=1000
PORT=${SINK_PORT:-18853}
OUT=${OUT:-$PWD/bench/out/webpush-floor}
source bench/swift/fanout-sink.sh
start_fanout_sink
master=$(cat "$OUT/sink/nginx.pid")
# The sink's CPU ticks: every nginx process of this sink (its master's children).
sink_ticks() {
    local total=0 pid
    for pid in $(pgrep -P "$master"); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
    done
    echo "$total"
}
hz=$(getconf CLK_TCK)
: > "$OUT/results.txt"
echo "== Web Push floor, $R rounds x $N per platform, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for run in $(seq "$R"); do
    for bin in $BINS; do
        for platform in apns webpush; do
            extra=()
            [[ $platform == webpush ]] && read -r -a extra <<< "${EXTRA:-}"
            before=$(sink_ticks)
            line=$("$bin" --url "https://127.0.0.1:$PORT" --ca "$CA" -n "$N" --warmup "$WARMUP" \
                --platforms "$platform" "${extra[@]}" 2>&1 | grep '^RESULT')
            after=$(sink_ticks)
            sink_us=$(awk -v t=$((after - before)) -v hz="$hz" -v n=$((N + WARMUP)) 'BEGIN {printf "%.1f", t / hz / n * 1e6}')
            echo "run=$run bin=$bin sink_us_per_request=$sink_us $line" | tee -a "$OUT/results.txt" \
                | awk '{print "  " $1, $5, $3, $8, $10, $NF}'
        done
    done
done
python3 - "$OUT/results.txt" <<'PY'
import collections, re, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    runs[(f["bin"], f["run"])][f["platform"]] = (
        float(f["rate_per_s"]), float(f["cpu_us_per_notification"]), float(f["sink_us_per_request"]))
by_bin = collections.defaultdict(list)
for (bin, run), p in sorted(runs.items()):
    if "apns" not in p or "webpush" not in p: continue
    (ra, ca, sa), (rw, cw, sw) = p["apns"], p["webpush"]
    ratio, bound = rw / ra, (ca + sa) / (cw + sw)
    by_bin[bin].append((ratio, bound, cw / ca, ca, sa, cw, sw))
    print(f"  {bin} run {run}: APNs {ra:.0f}/s {ca:.1f}+{sa:.1f} us, Web Push {rw:.0f}/s {cw:.1f}+{sw:.1f} us "
          f"(sender+sink per notification): rate ratio {ratio:.2f}x, CPU bound {bound:.2f}x")
for bin, rows in by_bin.items():
    med = lambda i: statistics.median(r[i] for r in rows)
    print(f"{bin}: {len(rows)} runs, medians: Web Push/APNs rate {med(0):.2f}x, bound from CPU {med(1):.2f}x, "
          f"sender CPU ratio {med(2):.2f}x; APNs {med(3):.1f} us + sink {med(4):.1f}, Web Push {med(5):.1f} us + sink {med(6):.1f}")
PY
