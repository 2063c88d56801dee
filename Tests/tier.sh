#!/usr/bin/env bash
# Runs one tier of the tests (the command after its name) and prints its wall time and the CPU time its processes
# used (user + system of every child waited for: test runners, servers, mocks, browsers; not PostgreSQL, which
# pg_ctl detaches). CPU far below the wall time means the tier mostly waits (timers, sockets, child processes), so
# it overlaps well with others on two cores; CPU near twice the wall time means it already fills both. make test
# and make check also collect the lines in $TIER_TIMES for their summary.
name=$1
shift
start=$(date +%s%N)
"$@"
status=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
# `times` prints the shell's own user and system time, then its children's: "0m12.345s 0m1.234s".
# (A builtin with a redirection runs in this shell; in $(...) it would run in a subshell without these children.)
times > "${TMPDIR:-/tmp}/tier-times.$$"
cpu=$(sed -n 2p "${TMPDIR:-/tmp}/tier-times.$$" | awk '{ total = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); total += t[1] * 60 + t[2] } printf "%.0f", total }')
rm -f "${TMPDIR:-/tmp}/tier-times.$$"
result=ok
[ "$status" = 0 ] || result="FAILED (exit $status)"
line=$(printf '  %-34s %5d.%d s  cpu %4s s  %s' "$name" $((ms / 1000)) $(((ms % 1000) / 100)) "$cpu" "$result")
echo "== tier:${line}"
if [ -n "${TIER_TIMES:-}" ]; then
    mkdir -p "$(dirname "$TIER_TIMES")"
    echo "$line" >> "$TIER_TIMES"
fi
exit "$status"
