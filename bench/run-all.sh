#!/usr/bin/env bash
# Runs every benchmark in turn (each prints its method, its numbers and a same-run reference ratio).
# Results of a quiet run are recorded in docs/BENCHMARKS.md. Everything stays on 127.0.0.1 and stops by itself.
#
#   make bench          (installs wrk, nginx + echo module, h2load and aioapns first)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
run() { echo; echo "######## $*"; "$@" 2>&1 | tee -a bench/out/run-all.txt; }
: > bench/out/run-all.txt
run bash bench/http/run.sh
run bash bench/apns/run.sh 100000
run bash bench/store/run.sh
run bash bench/registry/run.sh 10
run bash bench/publish/intake.sh 10
run bash bench/publish/run.sh 100000
run bash bench/eta/run.sh 100000 30000
run bash bench/eta/run.sh 200000 0
run bash bench/reliability/kill9.sh
run bash bench/postgresql/run.sh
echo; echo "All outputs: bench/out/run-all.txt"
