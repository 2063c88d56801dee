#!/usr/bin/env bash
# APNs client benchmark: the same N notifications sent by APNsClient (Swift), by a plain C loop on libcurl multi
# (the libcurl floor) and by h2load (the sink's ceiling), to (a) a fast nginx HTTP/2 sink and (b) the same sink
# answering after 50 ms. Prints one line per run and the ratios; results are recorded in RESULTS-client.md.
#
#   bench/apns/run.sh [n] [repeats]         default n=100000, repeats=1
#
# Environment: FAST_CONNS/FAST_STREAMS (default 2 x 100), SLOW_CONNS/SLOW_STREAMS (default 4 x 250, the
# configuration the peers were measured in, RESULTS.md; the 50 ms sink is also run at the client's default 6 x 200),
# FAST_PORT/SLOW_PORT (default 29543/29544, apart from the other bench scripts).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-100000}; repeats=${2:-1}
fast_port=${FAST_PORT:-29543}; slow_port=${SLOW_PORT:-29544}
fast_conns=${FAST_CONNS:-2}; fast_streams=${FAST_STREAMS:-100}
slow_conns=${SLOW_CONNS:-4}; slow_streams=${SLOW_STREAMS:-250}
token=$(printf 'ab%.0s' $(seq 32))

swift build -c release --product APNsBench 2>&1 | tail -1
loop=.build/curl_multi_loop
gcc -O2 -Wall -Wextra -o "$loop" bench/apns/curl_multi_loop.c -lcurl

fast_ca=$(bench/apns/nginx-sink.sh start "$fast_port")
slow_ca=$(bench/apns/nginx-sink.sh start "$slow_port" 50)
trap 'bench/apns/nginx-sink.sh stop "$fast_port"; bench/apns/nginx-sink.sh stop "$slow_port"' EXIT

echo "# $(date -u +%FT%TZ) $(nproc) cores; $(curl --version | head -1 | cut -d' ' -f1-6)"
run() {  # run <label> <port> <ca> <conns> <streams>
    local label=$1 port=$2 ca=$3 conns=$4 streams=$5
    echo "## $label: n=$n, $conns connections x $streams streams"
    bench/apns/h2load.sh "$port" "$n" "$conns" "$streams" | tail -1
    c_line=$("$loop" "https://127.0.0.1:$port/3/device/$token" "$ca" "$n" "$conns" "$streams")
    echo "$c_line"
    s_line=$(.build/release/APNsBench --url "https://127.0.0.1:$port" --ca "$ca" -n "$n" \
        --connections "$conns" --streams "$streams" --label "$label")
    echo "$s_line"
    c_rate=$(sed -n 's/.*: \([0-9]*\) notifications\/s.*/\1/p' <<<"$c_line")
    c_cpu=$(sed -n 's/.*, \([0-9.]*\) us CPU.*/\1/p' <<<"$c_line")
    s_rate=$(sed -n 's/.*rate_per_s=\([0-9]*\).*/\1/p' <<<"$s_line")
    s_cpu=$(sed -n 's/.*cpu_us_per_req=\([0-9.]*\).*/\1/p' <<<"$s_line")
    awk -v sr="$s_rate" -v cr="$c_rate" -v sc="$s_cpu" -v cc="$c_cpu" 'BEGIN {
        printf "ratio APNsClient/C-loop: rate %.2f, CPU per notification %.2f\n", sr / cr, sc / cc }'
}
for _ in $(seq "$repeats"); do
    run fast-sink "$fast_port" "$fast_ca" "$fast_conns" "$fast_streams"
    run sink-50ms "$slow_port" "$slow_ca" "$slow_conns" "$slow_streams"
    run sink-50ms-default "$slow_port" "$slow_ca" 6 200
done
