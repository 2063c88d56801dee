#!/usr/bin/env bash
# Builds bench/valgrind/sigsuspend_copy.c (once, into bench/out/valgrind) and prints the library's path, for
# `LD_PRELOAD` of a server run under valgrind: see that file for why.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$PWD/bench/out/valgrind
LIB=$OUT/sigsuspend_copy.so
SRC=bench/valgrind/sigsuspend_copy.c
if [ ! -f "$LIB" ] || [ "$SRC" -nt "$LIB" ]; then
    mkdir -p "$OUT"
    cc -O2 -shared -fPIC -o "$LIB" "$SRC" -ldl
fi
echo "$LIB"
