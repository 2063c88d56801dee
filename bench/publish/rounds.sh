#!/usr/bin/env bash
# Several rounds of bench/publish/run.sh at each N, then the medians per sender and sink delay with ratios: push-server,
# the plain C libcurl loop (6 x 200), the Go peer (bench/apns/gopeer, gorush-style, 1 x 100 and 6 x 200) and apns2
# itself where its source is at hand (bench/apns/apns2peer, the same two windows; APNS2_SRC=<a clone>), each
# with its CPU per notification and the sink's reads per request while it sent. One round runs every sender in turn,
# so on a loaded machine each round's senders see about the same load; the load average is printed per round.
#
#   bench/publish/rounds.sh [rounds] [N...]      (defaults: 3 rounds, N = 20000 50000)
#   AIOAPNS=1 bench/publish/rounds.sh 3 50000    includes aioapns (off by default here: ~0.4 ms of CPU per notification)
#   SKIP_BUILD=1, SERVER_BIN=...                 passed to bench/publish/run.sh
#
# Every round's output is kept in bench/out/publish-rounds/<N>-<round>/ (run.log and the per-sender files).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}; shift || true
if (($#)); then sizes=("$@"); else sizes=(20000 50000); fi
root=bench/out/publish-rounds
rm -rf "$root"; mkdir -p "$root"
export AIOAPNS=${AIOAPNS:-0}
for n in "${sizes[@]}"; do
    for r in $(seq "$rounds"); do
        out=$root/$n-$r; mkdir -p "$out"
        cut -d' ' -f1-3 /proc/loadavg > "$out/load"
        echo "== N=$n round $r/$rounds, load $(cat "$out/load")"
        OUT=$PWD/$out bench/publish/run.sh "$n" 2>&1 | tee "$out/run.log" | sed 's/^/  /'
        export SKIP_BUILD=1  # built once
    done
done
.venv/bin/python3 - "$root" "$rounds" "${sizes[@]}" <<'PY'
import os, re, statistics, sys
root, rounds, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
senders = [("push-server (6 x 200)", "server"), ("C libcurl loop (6 x 200)", "curl-loop"),
           ("Go peer, gorush default (1 x 100)", "gopeer-1x100"), ("Go peer, same window (6 x 200)", "gopeer-6x200"),
           ("apns2, gorush default (1 x 100)", "apns2-1x100"), ("apns2, same window (6 x 200)", "apns2-6x200"),
           ("aioapns", "aioapns")]
def read(path, pattern):
    if not os.path.exists(path): return None
    m = re.search(pattern, open(path).read())
    return float(m.group(1)) if m else None
def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
print(f"\n== medians of {rounds} rounds (rate notifications/s, CPU us per notification, sink reads per request)")
for n in sizes:
    loads = [open(os.path.join(root, f"{n}-{r}", "load")).read().split()[0] for r in range(1, rounds + 1)]
    print(f"N={n}, load at each round's start: {', '.join(loads)}")
    for case, label in (("fast", "sink answers at once"), ("delay50ms", "sink answers after 50 ms")):
        figures = {}
        for name, stem in senders:
            dirs = [os.path.join(root, f"{n}-{r}", case) for r in range(1, rounds + 1)]
            txt = "server.txt" if stem == "server" else f"{stem}.txt"
            sys_txt = "server-syscalls.txt" if stem == "server" else f"{stem}-syscalls.txt"
            rate = median(read(os.path.join(d, txt), r"([0-9.]+) notifications/s") for d in dirs)
            cpu = median(read(os.path.join(d, txt), r"([0-9.]+) us CPU/notification") for d in dirs)
            reads = median(read(os.path.join(d, sys_txt), r"sink ([0-9.]+) reads/request") for d in dirs)
            sink_cpu = median(read(os.path.join(d, sys_txt), r"reads/request, ([0-9.]+) us CPU/request") for d in dirs)
            if rate is None: continue
            figures[stem] = (rate, cpu)
            extra = f", sink {reads:.2f} reads/request, {sink_cpu:.1f} us sink CPU/request" if reads is not None else ""
            print(f"  {label}: {name}: {rate:.0f}/s, {cpu:.1f} us{extra}")
        for ours, ours_name in (("server", "push-server"), ("curl-loop", "C libcurl loop")):
            for ref, ref_name in (("curl-loop", "C libcurl loop"), ("gopeer-1x100", "Go peer 1 x 100"),
                                  ("gopeer-6x200", "Go peer 6 x 200"), ("apns2-1x100", "apns2 1 x 100"),
                                  ("apns2-6x200", "apns2 6 x 200"), ("aioapns", "aioapns")):
                if ours == ref or ours not in figures or ref not in figures: continue
                (r0, c0), (r1, c1) = figures[ours], figures[ref]
                print(f"    {ours_name} / {ref_name}: rate {r0 / r1:.2f}x, CPU per notification {c0 / c1:.2f}x")
PY
