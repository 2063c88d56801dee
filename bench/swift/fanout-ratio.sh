#!/usr/bin/env bash
# FCM and Web Push against APNs in the same process and run (issue 27 item 4): FanoutBench R times against one
# nginx sink, and per run the ratio of each platform's rate and CPU per notification to APNs', then the medians.
# On a loaded machine only ratios within one run compare; alternating builds (BINS) run by run, so load drifts hit
# each alike.
#
#   bench/swift/fanout-ratio.sh [R] [N]         (default 5 runs of 10,000 per platform)
#   BINS="old/FanoutBench new/FanoutBench" bench/swift/fanout-ratio.sh 5    compares builds, alternating
#   PLATFORMS=apns,fcm bench/swift/fanout-ratio.sh                          (default apns,fcm,webpush)
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${1:-5}
N=${2:-10000}
PLATFORMS=${PLATFORMS:-apns,fcm,webpush}
PORT=${SINK_PORT:-18843}
OUT=${OUT:-$PWD/bench/out/fanout-ratio}
source bench/swift/fanout-sink.sh
start_fanout_sink
: > "$OUT/results.txt"
echo "== FanoutBench ratios, $R runs x $N per platform, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for run in $(seq "$R"); do
    for bin in $BINS; do
        "$bin" --url "https://127.0.0.1:$PORT" --ca "$CA" -n "$N" --platforms "$PLATFORMS" 2>&1 | grep '^RESULT' \
            | sed "s|^|run=$run bin=$bin |" | tee -a "$OUT/results.txt" \
            | awk '{print "  " $1, $4, $7, $9, $NF}'
    done
done
python3 - "$OUT/results.txt" <<'PY'
import collections, re, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    runs[(fields["bin"], fields["run"])][fields["platform"]] = (float(fields["rate_per_s"]), float(fields["cpu_us_per_notification"]))
ratios = collections.defaultdict(lambda: collections.defaultdict(list))
for (bin, run), platforms in sorted(runs.items()):
    apns = platforms.get("apns")
    if not apns: continue
    for name, (rate, cpu) in platforms.items():
        if name == "apns": continue
        ratios[bin][name].append((rate / apns[0], cpu / apns[1]))
        print(f"  {bin.split('/')[-2] if '/' in bin else bin} run {run} {name}/apns: rate {rate / apns[0]:.2f}x, CPU per notification {cpu / apns[1]:.2f}x")
for bin, by_name in ratios.items():
    for name, pairs in by_name.items():
        rates = [p[0] for p in pairs]; cpus = [p[1] for p in pairs]
        print(f"{bin}: {name}/apns over {len(pairs)} runs: rate median {statistics.median(rates):.2f}x "
              f"(range {min(rates):.2f}-{max(rates):.2f}), CPU per notification median {statistics.median(cpus):.2f}x "
              f"(range {min(cpus):.2f}-{max(cpus):.2f})")
PY
