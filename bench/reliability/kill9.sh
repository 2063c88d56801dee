#!/usr/bin/env bash
# kill -9 / SIGTERM in the middle of a 100,000-device fan-out; every device must still get the notification.
# Not part of `make test` (about 3 minutes). Usage: bench/reliability/kill9.sh [--devices N] [--signals KILL,TERM]
# SERVER_BIN=path/to/push-server measures another build (e.g. an older commit) the same way, without building;
# SKIP_BUILD=1 uses .build/release/push-server as it is. A build older than provider tokens kept across a restart
# (e.g. 2247715) signs a new token after the restart: run it with --token-floor-scope connection.
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory venv >/dev/null
[ -n "${SERVER_BIN:-}${SKIP_BUILD:-}" ] || swift build -c release --product push-server >/dev/null
PUSH_SERVER_BIN="${SERVER_BIN:-$PWD/.build/release/push-server}" exec .venv/bin/python3 bench/reliability/kill9.py "$@"
