#!/usr/bin/env bash
# `push-server copy-store` timed both ways (SQLite -> PostgreSQL -> SQLite) on a generated registry, on a throwaway
# PostgreSQL 15 cluster (fsync on) removed at the end. Numbers: docs/BENCHMARKS.md, "Store move".
#
#   bench/copystore/run.sh                     100,000 devices
#   bench/copystore/run.sh --devices 1000000   1M devices (~2.5 GB under $TMPDIR while it runs)
#
# SERVER_BIN measures another build.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -n ${SERVER_BIN:-} ]] || swift build -c release --product push-server >/dev/null
exec python3 bench/copystore/copystore.py "$@"
