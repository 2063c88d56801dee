#!/usr/bin/env bash
# The migration round trip (issue 28): SQLite export -> PostgreSQL import -> one publish to every device through a
# local APNs sink (each reached exactly once) -> copy-store back to SQLite, verified. Each step's time and check:
# docs/BENCHMARKS.md, "Migration round trip". A throwaway PostgreSQL 15 cluster (fsync on), removed at the end.
#
#   bench/migration/roundtrip.sh                    100,000 devices
#   bench/migration/roundtrip.sh --devices 20000
#
# SERVER_BIN measures another build.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -n ${SERVER_BIN:-} ]] || make release-binary >/dev/null
exec python3 bench/migration/roundtrip.py "$@"
