#!/usr/bin/env bash
# PostgreSQL benchmarks of issue 12 ("Show"), each on its own throwaway PostgreSQL 15 cluster (fsync on) that is
# stopped and removed at the end, everything on 127.0.0.1:
#
#   bench/postgresql/run.sh                 both below at the issue's scale (1M-device publishes, 10M registry)
#   bench/postgresql/run.sh nodes [...]     one node on PostgreSQL vs SQLite, two nodes vs one, kill -9 of one of
#                                           two nodes (bench/postgresql/nodes.py --help)
#   bench/postgresql/run.sh mixed [...]     exactly once under a mixed workload (sharded fan-out, small publishes,
#                                           registrations), one node vs two (bench/postgresql/mixed.py --help)
#   bench/postgresql/run.sh registry [...]  10M devices by COPY: load time, first target page, sizes, node RSS
#                                           (bench/postgresql/registry.py --help)
#   bench/postgresql/run.sh claim [...]     one claim behind a backlog of queued publishes, this tree's claim
#                                           statement against --base's (bench/postgresql/claim.py --help)
#
# Reduced scale: `run.sh nodes --devices 100000 --kill-devices 100000`, `run.sh registry --devices 1000000
# --subscribers 100000`. SERVER_BIN / SEED_BIN measure other builds. Needs postgresql-15, nginx with the echo
# module (`make deps-bench`). The 10M registry needs ~10 GB of disk under $TMPDIR while it runs (6 GB of
# database + WAL), removed at the end; about 5-7 minutes to load on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -n ${SERVER_BIN:-} ]] || swift build -c release --product push-server >/dev/null
[[ -n ${SEED_BIN:-} ]] || swift build -c release --product SeedDevices >/dev/null
PY=python3
case "${1:-all}" in
    nodes) shift; exec $PY bench/postgresql/nodes.py "$@" ;;
    # The strict mock APNs and the harness need the test venv (h2, cryptography, requests).
    mixed) shift; make --no-print-directory venv >/dev/null
        PUSH_SERVER_BIN="${SERVER_BIN:-$PWD/.build/release/push-server}" exec .venv/bin/python3 bench/postgresql/mixed.py "$@" ;;
    registry) shift; exec $PY bench/postgresql/registry.py "$@" ;;
    claim) shift; exec $PY bench/postgresql/claim.py "$@" ;;
    all) $PY bench/postgresql/nodes.py; exec $PY bench/postgresql/registry.py ;;
    *) echo "usage: $0 [nodes|mixed|registry|claim|all] [options]" >&2; exit 2 ;;
esac
