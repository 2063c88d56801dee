#!/usr/bin/env bash
# How a sender writes its HTTP/2 requests, seen from both ends of the socket: the sender's write syscalls per request
# and the nginx sink's (bench/apns/nginx-sink.sh) reads and CPU per request (issue 27: libcurl writes each request
# in small pieces, Go's HTTP/2 batches frames into large writes).
#
#   bench/apns/sink-syscalls.sh start <sink_dir> <state_file> [sender_pid]   before the sender starts sending
#   bench/apns/sink-syscalls.sh stop <state_file> <requests>                 after it finished; prints one line
#
# Method: `perf stat` counts syscall tracepoints in the kernel (read, readv, recvfrom, write, writev, sendto, sendmsg)
# of the sink's worker processes and, when given, of every thread of the sender, which costs far less than strace
# and does not change anyone's batching; sink CPU = the workers' utime+stime (/proc/PID/stat) over the same span.
# The sender's writes per request depend on how it writes; the sink's reads per request also on how often the
# sink gets the CPU (a starved sink finds more bytes per read), so compare those within one run. Needs root.
set -euo pipefail
cmd=${1:-}
EVENTS=syscalls:sys_enter_read,syscalls:sys_enter_readv,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write
EVENTS=$EVENTS,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg
ticks() { local total=0 pid; for pid in $1; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo $total; }
count() {  # <perf -x, output> <regex of event names>: the summed counts
    awk -F, -v re="$2" '$3 ~ re { total += $1 } END { print total + 0 }' "$1"
}
case $cmd in
start)
    dir=$2; state=$3; sender=${4:-}
    workers=$(pgrep -P "$(cat "$dir/nginx.pid")" | tr '\n' ' ')
    perf stat -x, -o "$state.sink" -e "$EVENTS" -p "$(echo $workers | tr ' ' ',')" &
    echo "sink_perf=$! workers='$workers' ticks=$(ticks "$workers")" > "$state"
    if [[ -n $sender ]]; then
        sender_events=$EVENTS
        if [[ ${PROBES:-0} != 0 ]]; then
            for probe in probe_libc:malloc probe_libcurl:curl_multi_perform; do
                perf probe -l 2>/dev/null | grep -q "$probe " && sender_events=$sender_events,$probe
            done
        fi
        perf stat -x, -o "$state.sender" -e "$sender_events" -p "$sender" &
        echo "sender_perf=$!" >> "$state"
    fi
    sleep 0.3  # perf attaches
    ;;
stop)
    state=$2; n=$3; sender_perf=
    source "$state"
    t1=$(ticks "$workers")
    for p in $sink_perf $sender_perf; do
        kill -INT "$p" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done  # not our child: poll
    done
    reads=$(count "$state.sink" 'sys_enter_(read|readv|recvfrom)$')
    line=$(awk -v n="$n" -v r="$reads" -v dt=$((t1 - ticks)) -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "sink %.2f reads/request, %.1f us CPU/request", r / n, dt / hz * 1e6 / n }')
    if [[ -n $sender_perf ]]; then
        writes=$(count "$state.sender" 'sys_enter_(write|writev|sendto|sendmsg)$')
        mallocs=$(count "$state.sender" 'probe_libc:malloc$')
        performs=$(count "$state.sender" 'probe_libcurl:curl_multi_perform$')
        line="$(awk -v n="$n" -v w="$writes" -v m="$mallocs" -v p="$performs" 'BEGIN {
            printf "sender %.2f writes/request", w / n
            if (m > 0) printf ", %.1f mallocs/request, %.3f curl_multi_perform/request", m / n, p / n
            printf "; " }')$line"
    fi
    echo "$line"
    ;;
*) echo "usage: $0 start <sink_dir> <state_file> [sender_pid] | stop <state_file> <requests>" >&2; exit 2 ;;
esac
