#!/usr/bin/env bash
# StoreBench: bulk-load 1M devices into the SQLite store through its API, then measure registrations/s, RSS,
# fan-out streaming of a 100k-subscriber interest, and enqueue throughput with group commit vs one transaction per
# row (same run). Release build. Usage: bench/store/run.sh [devices] [directory-to-keep-the-db]
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product StoreBench >&2
exec .build/release/StoreBench "$@"
