#!/usr/bin/env bash
# Runs every APNs benchmark peer against the nginx sink, with no delay and with a 50 ms delay, and prints one
# line per run. Used to fill bench/apns/RESULTS.md; the Swift client's benchmark (bench/swift/APNsBench) is run
# against the same sinks so its numbers can be read against these. The Go peer (gopeer/, a gorush-style sender on
# golang.org/x/net/http2) runs at 1 x 100 and 6 x 200 where Go is installed.
#
#   bench/apns/run-peers.sh [n] [port]      (defaults: n=50000, port=28443; aioapns sends n/5)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-50000}; port=${2:-28443}
py=.venv/bin/python3
mkdir -p bench/out
gcc -O2 -Wall -Wextra -o bench/out/curl_multi_loop bench/apns/curl_multi_loop.c -lcurl
gopeer=$(bench/apns/gopeer/build.sh | tail -1) || gopeer=  # the Go peer; build.sh says why when it is skipped
url="https://127.0.0.1:$port/3/device/$(printf 'ab%.0s' $(seq 32))"
trap 'bench/apns/nginx-sink.sh stop "$port"' EXIT

for delay in 0 50; do
    bench/apns/nginx-sink.sh stop "$port"
    ca=$(bench/apns/nginx-sink.sh start "$port" "$delay")
    echo "== sink delay ${delay} ms ($(nproc) cores, $(date -u +%FT%TZ))"
    if [[ $delay == 0 ]]; then shapes="1:100 4:100"; else shapes="4:250"; fi
    for shape in $shapes; do
        bench/apns/h2load.sh "$port" "$n" "${shape%:*}" "${shape#*:}" | tail -1
    done
    for shape in $shapes; do
        bench/out/curl_multi_loop "$url" "$ca" "$n" "${shape%:*}" "${shape#*:}" | sed 's/ \[libcurl.*//'
    done
    if $py -c 'import aioapns' 2>/dev/null; then
        $py bench/apns/aioapns_bench.py --port "$port" --ca "$ca" --n $((n / 5)) --concurrency 1000
    else
        echo "aioapns not installed: .venv/bin/pip install aioapns==4.0"
    fi
    if [[ -n $gopeer ]]; then  # gorush's default window, then push-server's (6 x 200)
        for shape in "1 100" "6 200"; do "$gopeer" "$url" "$ca" "$n" $shape | sed 's/ \[go.*//'; done
    fi
done
