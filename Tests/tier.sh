#!/usr/bin/env bash
# Runs one tier of the tests (the command after its name) and prints its wall time; make test and make check also
# collect the lines in $TIER_TIMES for their summary.
name=$1
shift
start=$(date +%s%N)
"$@"
status=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
result=ok
[ "$status" = 0 ] || result="FAILED (exit $status)"
line=$(printf '  %-26s %5d.%d s  %s' "$name" $((ms / 1000)) $(((ms % 1000) / 100)) "$result")
echo "== tier:${line}"
if [ -n "${TIER_TIMES:-}" ]; then
    mkdir -p "$(dirname "$TIER_TIMES")"
    echo "$line" >> "$TIER_TIMES"
fi
exit "$status"
