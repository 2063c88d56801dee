#!/usr/bin/env python3
"""Splits a `perf record -a -g` profile of one process into its threads and their leaf frames.

    perf_split.py PERF_DATA PID [TOP]

Prints, per thread, its samples and the shared objects its samples fall in, then the process's top symbols (self
time) once for the sender threads (those spending most samples in libcurl, nghttp2, OpenSSL or the kernel) and once
for the rest (the engine, the store, the HTTP server). Symbols are demangled with swift-demangle when present.
"""
import collections, os, shutil, subprocess, sys

data, pid = sys.argv[1], sys.argv[2]
top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
out = subprocess.run(["perf", "script", "-i", data, "--pid", pid, "-F", "tid,ip,sym,dso", "-G"],
                     capture_output=True, text=True).stdout
threads = collections.defaultdict(collections.Counter)
symbols = collections.defaultdict(collections.Counter)
for line in out.splitlines():
    parts = line.split(None, 1)
    if len(parts) < 2:
        continue
    tid, rest = parts
    rest = rest.strip().split(None, 1)[1] if " " in rest.strip() else ""  # drop the address
    dso = rest[rest.rfind("(") + 1:-1] if rest.endswith(")") else "?"
    sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
    lib = os.path.basename(dso).split(".so")[0]
    threads[tid][lib] += 1
    symbols[tid][f"{lib}  {sym}"] += 1
total = sum(sum(c.values()) for c in threads.values())
SENDER = {"libcurl", "libnghttp2", "libssl", "libcrypto", "[kernel", "[kernel.kallsyms]"}
def is_sender(counter):
    n = sum(counter.values())
    return sum(v for k, v in counter.items() if k in SENDER or k.startswith("[kernel")) > 0.5 * n and counter["libcurl"] > 0.1 * n
print(f"{total} samples in process {pid}")
groups = {"sender threads": collections.Counter(), "other threads": collections.Counter()}
libs = {"sender threads": collections.Counter(), "other threads": collections.Counter()}
for tid, counter in sorted(threads.items(), key=lambda kv: -sum(kv[1].values())):
    n = sum(counter.values())
    group = "sender threads" if is_sender(counter) else "other threads"
    groups[group].update(symbols[tid]); libs[group].update(counter)
    if n >= total * 0.01:
        shares = ", ".join(f"{k} {v * 100 / n:.0f}%" for k, v in counter.most_common(5))
        print(f"  thread {tid:>7}: {n * 100 / total:5.1f}% ({group}): {shares}")
demangle = shutil.which("swift-demangle") or "/opt/swift/usr/bin/swift-demangle"
for group, counter in groups.items():
    n = sum(counter.values())
    if not n:
        continue
    print(f"== {group}: {n * 100 / total:.1f}% of the process's samples; by library: " +
          ", ".join(f"{k} {v * 100 / n:.0f}%" for k, v in libs[group].most_common(8)))
    lines = [f"{v * 100 / total:6.2f}%  {k}" for k, v in counter.most_common(top)]
    text = "\n".join(lines)
    if os.path.exists(demangle):
        text = subprocess.run([demangle, "--simplified"], input=text, capture_output=True, text=True).stdout
    for line in text.splitlines():
        print("  " + line[:170])
