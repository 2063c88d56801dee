#!/usr/bin/env bash
# Builds one libFuzzer target (release, AddressSanitizer) and fuzzes it for SECONDS (default 180), keeping the
# corpus in fuzz/corpus/TARGET (not committed; it starts from the committed seeds in fuzz/seeds/TARGET) and any crash
# in fuzz/artifacts/TARGET/. Targets: JSONFuzz HTTPParserFuzz DERFuzz PublishFuzz DeviceBodyFuzz.
# Extra arguments go to libFuzzer. `fuzz/run.sh TARGET replay FILE…` builds and runs just those inputs (a crash;
# paths relative to fuzz/).
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET [SECONDS] [libFuzzer arguments]}
seconds=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))

# SwiftPM's --sanitize=fuzzer links libFuzzer but (Swift 6 driver) hands the frontend only the last --sanitize
# value and no coverage: the -Xswiftc flags instrument every module, ours included, for both.
# No -enable-testing: the fuzzers call only the public API of the products they link (BeamsModel, JSON, …).
swift build -c release --product "$target" \
    --sanitize=fuzzer --sanitize=address \
    -Xswiftc -sanitize=fuzzer,address \
    -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table

# Long enough to cross the limits the code under test enforces itself (the request-line and header limits the HTTP
# target can pick, the 10 KiB interests publish body), short enough to keep executions fast.
case $target in
    HTTPParserFuzz) max_len=8192 ;;
    PublishFuzz) max_len=16384 ;;
    *) max_len=4096 ;;
esac

# Swift's backtracer would read the crashed stack from another thread, which ASan reports as a second, bogus error.
export SWIFT_BACKTRACE=enable=no
if [ "$seconds" = replay ]; then exec ".build/release/$target" "$@"; fi

mkdir -p "corpus/$target" "seeds/$target" "artifacts/$target"
args=(-max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="artifacts/$target/")
if [ "$seconds" != 0 ]; then args+=(-max_total_time="$seconds"); fi  # 0: until stopped or a crash
# libFuzzer adds new inputs to the first directory only, so the seeds stay as committed.
exec ".build/release/$target" "${args[@]}" "$@" "corpus/$target" "seeds/$target"
