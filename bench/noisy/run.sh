#!/usr/bin/env bash
# Noisy-neighbour benchmark (issue 25; not a test): instance B's one-device publishes and registrations while an
# attacker, a black-holed destination and instance A's campaigns, fan-out, hanging webhooks and slow APNs make
# noise. See bench/noisy/noisy.py for the method and what is printed.
#
#   bench/noisy/run.sh [--phase-seconds 30] [--fanout 100000] [--only quiet,all]    (needs `make deps-bench`)
#                      [--publish-every 0.1] [--register-every 0.05]   (B's rates: samples for an honest p99)
#                      [--trace] (where B's publishes spend their time) [--dump DIR] (each phase's raw samples)
#
# SKIP_BUILD=1 uses the release binaries as they are (PUSH_SERVER_BIN another server build to compare).
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -n ${SKIP_BUILD:-} ]] || { swift build -c release --product push-server >/dev/null && swift build -c release --product SeedDevices >/dev/null; }
exec .venv/bin/python3 bench/noisy/noisy.py "$@"
