#!/usr/bin/env python3
"""Runs the test bundle as a few concurrent processes, each taking the next group of tests from a queue: the XCTest
classes in groups, and the Swift Testing tests (the store contract suite, parameterised over backends) as one more
group, the bundle run with `--testing-library swift-testing` (what `swift test` runs after XCTest).

Why not `swift test --parallel`: on Linux it starts one process per test (1,468 of them), so whatever a test
process sets up once (a PostgreSQL cluster, test certificates, a strict mock) is set up again for every test, and
`swift test` holds the package's build lock for the whole run. Here a group is a module's classes, in chunks, with
the classes that use PostgreSQL kept together (one throwaway cluster per group); each group runs in one process of
the bundle, which is what `swift test` runs too. The Swift Testing group runs its tests concurrently inside its one
process, so its PostgreSQL cases share one throwaway cluster. Groups known to be long start first. Every group's
output is printed when it ends, with its wall time; a group that fails or crashes fails the run, and its log is
printed whole.

    run_xctest.py BUNDLE [--workers N] [--skip REGEX] [--only REGEX]

--skip/--only are regular expressions searched in "Module.Class/testMethod" and in Swift Testing's
"Module.Suite/test(_:)" (the Makefile's CHECK_SKIP selects the in-process tier this way); a class left with only some
of its tests runs those by name. Which backends the contract suite runs on is not a name: PUSH_TEST_TIER=check leaves
PostgreSQL out, PUSH_TEST_BACKENDS narrows the list (Tests/PushStoreTests/Contract/StoreContract.swift).
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


# The bundle's Swift Testing entry point; NO_COLOR keeps its log free of terminal escapes.
SWIFT_TESTING = ["--testing-library", "swift-testing"]
SWIFT_TESTING_GROUP = "swift-testing"


# What Swift Testing exits with when no test matched (a bundle without Swift Testing tests).
NO_TESTS_FOUND = 69


def list_tests(bundle, *options):
    listed = subprocess.run([bundle, *options, "--list-tests"], capture_output=True, text=True)
    if listed.returncode != 0 and not (options and listed.returncode == NO_TESTS_FOUND):
        raise SystemExit(f"{bundle} --list-tests failed ({listed.returncode}): {listed.stderr}")
    return [line.strip() for line in listed.stdout.splitlines() if "/" in line]


def swift_testing_group(tests, skip, only):
    """The Swift Testing tests selected, as the bundle's arguments: none when all are, else a --filter for each."""
    chosen = [t for t in tests if not (skip and re.search(skip, t)) and not (only and not re.search(only, t))]
    if not chosen:
        return None, 0
    filters = [] if len(chosen) == len(tests) else [a for t in chosen for a in ("--filter", re.escape(t))]
    # --verbose: a line for each test case's end, which the summary counts per backend.
    return SWIFT_TESTING + ["--verbose"] + filters, len(chosen)


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
    arguments = selectors if classes == [SWIFT_TESTING_GROUP] else [",".join(selectors)]
    with open(path, "wb") as log:
        status = subprocess.run([bundle, *arguments], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=dict(os.environ, NO_COLOR="1")).returncode
    return index, classes, status, time.monotonic() - start, path


def summary_line(path):
    """XCTest's last 'Executed N tests, with F failures' line for the whole selection, or Swift Testing's last
    'Test run with N tests in M suites passed/failed …' line."""
    lines = [line.strip() for line in open(path, errors="replace")
             if line.strip().startswith("Executed ") or "Test run with " in line]
    return lines[-1].lstrip("✔✘ ") if lines else "no summary (crashed?)"


def swift_testing_cases(path):
    """Test cases per argument (the contract suite's backend) that passed or failed, from the group's log (a case
    cancelled with `Test.cancel`, a backend without the role, is logged as passed by this toolchain)."""
    counts = collections.Counter()
    for line in open(path, errors="replace"):
        found = re.search(r"Test case passing 1 argument \w+ → (\S+) (?:\(\S+\) )?to \S+ (passed|failed)", line)
        if found:
            counts[f"{found.group(1)} {found.group(2)}"] += 1
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("XCTEST_WORKERS", "3")))
    parser.add_argument("--skip", default="")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    groups, tests = make_groups(list_tests(args.bundle), args.skip, args.only)
    testing, testing_count = swift_testing_group(list_tests(args.bundle, *SWIFT_TESTING), args.skip, args.only)
    if testing:
        groups.insert(0, ([SWIFT_TESTING_GROUP], testing))
    print(f"xctest: {tests} XCTest tests and {testing_count} Swift Testing tests in {len(groups)} groups on "
          f"{args.workers} workers", flush=True)
    failed = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xctest-") as logs, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        futures = [pool.submit(run_group, args.bundle, i, g, selectors, logs) for i, (g, selectors) in enumerate(groups)]
        for future in concurrent.futures.as_completed(futures):
            index, classes, status, seconds, path = future.result()
            if classes == [SWIFT_TESTING_GROUP]:
                module, names = "Swift Testing", swift_testing_cases(path) or "no test case ran"
            else:
                names = ", ".join(c.split(".", 1)[1] for c in classes)
                module = classes[0].split(".")[0]
            print(f"xctest: {'ok' if status == 0 else 'FAILED'} {seconds:6.1f} s  {module}: {names}  "
                  f"[{summary_line(path)}]", flush=True)
            if status != 0:
                failed.append(classes)
                with open(path, errors="replace") as log:
                    sys.stdout.write(log.read())
                sys.stdout.flush()
    print(f"xctest: {tests} XCTest tests and {testing_count} Swift Testing tests, {len(groups)} groups, "
          f"{time.monotonic() - start:.1f} s wall, "
          f"{len(failed)} groups failed", flush=True)
    for classes in failed:
        print("xctest: FAILED " + ",".join(classes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
