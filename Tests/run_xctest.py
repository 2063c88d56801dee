#!/usr/bin/env python3
"""Runs the XCTest bundle as a few concurrent processes, each taking the next group of test classes from a queue.

Why not `swift test --parallel`: on Linux it starts one process per test (1,468 of them), so whatever a test
process sets up once (a PostgreSQL cluster, test certificates, a strict mock) is set up again for every test, and
`swift test` holds the package's build lock for the whole run. Here a group is a module's classes, in chunks, with
the classes that use PostgreSQL kept together (one throwaway cluster per group); each group runs in one process of
the bundle, which is what `swift test` runs too. Groups known to be long start first. Every group's output is
printed when it ends, with its wall time; a group that fails or crashes fails the run, and its log is printed whole.

    run_xctest.py BUNDLE [--workers N] [--skip REGEX] [--only REGEX]

--skip/--only are regular expressions searched in "Module.Class/testMethod" (the Makefile's CHECK_SKIP selects the
in-process tier this way); a class left with only some of its tests runs those by name.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

# Classes that share a PostgreSQL cluster when they run in one process.
POSTGRESQL = re.compile(r"PostgreSQL|OnPostgreSQL|^PostgreSQLStoreTests\.")
# Started first, so that the longest groups do not start last (measured: docs/CONTRIBUTING.md, "Test tiers").
FIRST = re.compile(r"^PostgreSQLStoreTests\.|OnPostgreSQL|^APNsClientTests\.|^FCMClientTests\.|^WebPushTests\.")
# Classes per group: small enough that the long modules (the APNs client against the strict mock) spread over
# the workers, large enough that a process's start-up is paid rarely.
CHUNK = 5


def list_tests(bundle):
    listed = subprocess.run([bundle, "--list-tests"], check=True, capture_output=True, text=True).stdout
    return [line.strip() for line in listed.splitlines() if "/" in line]


def make_groups(tests, skip, only):
    """Groups of selectors: a class name when all its tests are selected, else its selected tests one by one."""
    every = collections.Counter(test.split("/")[0] for test in tests)
    chosen = collections.defaultdict(list)
    for test in tests:
        if (skip and re.search(skip, test)) or (only and not re.search(only, test)):
            continue
        chosen[test.split("/")[0]].append(test)
    counts = {name: len(selected) for name, selected in chosen.items()}
    selectors = {name: [name] if len(selected) == every[name] else selected for name, selected in chosen.items()}
    by_module = collections.defaultdict(list)
    for name in sorted(chosen):
        by_module[name.split(".")[0]].append(name)
    groups = []
    for module, classes in by_module.items():
        shared = [c for c in classes if POSTGRESQL.search(c)]
        rest = [c for c in classes if not POSTGRESQL.search(c)]
        if shared:
            groups.append(shared)
        groups += [rest[i:i + CHUNK] for i in range(0, len(rest), CHUNK)]
    # Long first, then by number of tests.
    groups.sort(key=lambda g: (not any(FIRST.search(c) for c in g), -sum(counts[c] for c in g)))
    return [(g, [s for c in g for s in selectors[c]]) for g in groups], sum(counts.values())


def run_group(bundle, index, classes, selectors, logs):
    path = os.path.join(logs, f"group-{index:03d}.log")
    start = time.monotonic()
    with open(path, "wb") as log:
        status = subprocess.run([bundle, ",".join(selectors)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL).returncode
    return index, classes, status, time.monotonic() - start, path


def summary_line(path):
    """XCTest's last 'Executed N tests, with F failures' line for the whole selection."""
    lines = [line.strip() for line in open(path, errors="replace") if line.strip().startswith("Executed ")]
    return lines[-1] if lines else "no summary (crashed?)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("XCTEST_WORKERS", "3")))
    parser.add_argument("--skip", default="")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    groups, tests = make_groups(list_tests(args.bundle), args.skip, args.only)
    print(f"xctest: {tests} tests in {len(groups)} groups on {args.workers} workers", flush=True)
    failed = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xctest-") as logs, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        futures = [pool.submit(run_group, args.bundle, i, g, selectors, logs) for i, (g, selectors) in enumerate(groups)]
        for future in concurrent.futures.as_completed(futures):
            index, classes, status, seconds, path = future.result()
            names = ", ".join(c.split(".", 1)[1] for c in classes)
            module = classes[0].split(".")[0]
            print(f"xctest: {'ok' if status == 0 else 'FAILED'} {seconds:6.1f} s  {module}: {names}  "
                  f"[{summary_line(path)}]", flush=True)
            if status != 0:
                failed.append(classes)
                with open(path, errors="replace") as log:
                    sys.stdout.write(log.read())
                sys.stdout.flush()
    print(f"xctest: {tests} tests, {len(groups)} groups, {time.monotonic() - start:.1f} s wall, "
          f"{len(failed)} groups failed", flush=True)
    for classes in failed:
        print("xctest: FAILED " + ",".join(classes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
