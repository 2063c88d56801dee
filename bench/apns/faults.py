#!/usr/bin/env python3
"""APNs fault matrix: the release binary fans one publish out to 3,000 devices through the strict mock APNs while
the mock injects connection faults, at several answer latencies, several runs per cell.

Faults (per mock connection, `Tests/Support/README.md`): none; `goaway` (GOAWAY after every 300 answers);
`close` (abrupt TCP close after 250 answers, requests in flight cut off); `settings` (Apple's order: one stream
until the first answer, the SETTINGS raise right behind it); `goaway+settings` (issue 24's case). Latencies: 0, 50,
200 ms. The server runs its default APNs pool (6 connections × 200 streams, 30 s request timeout).

Per cell it prints: runs, devices with exactly one 200 in every run, missing and duplicate 200s (answers the mock
actually wrote, summed over the runs), publish time (median, and the median against the fault-free median of the
same latency; worst, and the worst against that fault-free median), and the mock's GOAWAYs, dropped and opened
connections and refused streams (means per run).
Target: exactly one 200 per device, no publish slower than 2× its fault-free time. Exits 1 when a cell misses it.

    .venv/bin/python bench/apns/faults.py --runs 10          # needs .build/release/push-server (make release-binary)
    .venv/bin/python bench/apns/faults.py --runs 1 --latencies 50 --faults none,goaway+settings
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))

from beams import Beams, alert, random_token, unique  # noqa: E402
from bulk import register_devices  # noqa: E402
from harness import INSTANCE_ID, Environment  # noqa: E402

FAULTS = {
    "none": {},
    "goaway": {"goaway_after": 300},
    "close": {"drop_after": 250},
    "settings": {"raise_streams_after_answer": True},
    "goaway+settings": {"goaway_after": 300, "raise_streams_after_answer": True},
}
REQUEST_TIMEOUT_S = 30


def publish_once(client, mock, interest, faults, latency_ms):
    """One publish under `faults`; returns (seconds, publish status, mock stats)."""
    # Each publish starts on new connections, as after a restart: the faults (the SETTINGS raise above all) act
    # on connections as they open.
    requests.post(f"{mock.control}/connections/goaway", timeout=5).raise_for_status()
    mock.reset()
    mock.configure(record=False, delay_ms=latency_ms, **faults)
    time.sleep(0.2)  # the server reads the GOAWAYs while idle
    started = time.monotonic()
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    deadline = started + REQUEST_TIMEOUT_S * 4
    while True:
        status = client.status(publish_id)
        if status["status"] in ("finished", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return time.monotonic() - started, status, mock.stats()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--devices", type=int, default=3000)
    parser.add_argument("--latencies", default="0,50,200", help="comma-separated answer delays in ms")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated: " + ", ".join(FAULTS))
    args = parser.parse_args()
    latencies = [int(x) for x in args.latencies.split(",")]
    faults = [f.strip() for f in args.faults.split(",")]
    if "none" not in faults:
        faults.insert(0, "none")  # the reference time of each latency

    failed = False
    with tempfile.TemporaryDirectory(prefix="apns-faults-") as directory:
        environment = Environment(Path(directory))
        try:
            mock = environment.mock()
            server = environment.server(mock, {"apns": {"requestTimeoutSeconds": REQUEST_TIMEOUT_S}}, name="faults")
            client = Beams(server)
            interest = unique("faults")
            tokens = [random_token() for _ in range(args.devices)]
            _, seconds = register_devices(server, INSTANCE_ID, tokens, interest)
            print(f"{args.devices} devices registered in {seconds:.1f} s; {args.runs} runs per cell, round-robin; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            print(f"{'latency':>7} {'fault':<16} {'runs':>4} {'exactly1':>8} {'missing':>7} {'dups':>4} "
                  f"{'median s':>8} {'med/ref':>7} {'worst s':>7} {'worst/ref':>9} {'goaway':>6} {'closed':>6} {'conns':>5} "
                  f"{'refused':>7}", flush=True)
            for latency in latencies:
                # Round-robin over the cells, so that a change of load on the shared machine hits every cell of a
                # latency alike instead of the few that happen to run during it.
                cells = {fault: {"times": [], "exact": 0, "missing": 0, "duplicates": 0, "goaways": [], "dropped": [],
                                 "opened": [], "refused": []} for fault in faults}
                for _ in range(args.runs):
                    for fault in faults:
                        cell = cells[fault]
                        seconds, status, stats = publish_once(client, mock, interest, FAULTS[fault], latency)
                        sent = stats["sent_per_token"]
                        counts = [sent.get(t, {}).get("200", 0) for t in tokens]
                        cell["missing"] += sum(1 for c in counts if c == 0)
                        cell["duplicates"] += sum(c - 1 for c in counts if c > 1)
                        cell["exact"] += all(c == 1 for c in counts) and status["status"] == "finished"
                        cell["times"].append(seconds)
                        cell["goaways"].append(stats["goaways_sent"])
                        cell["dropped"].append(stats["connections_dropped"])
                        cell["opened"].append(stats["connections_opened"])
                        cell["refused"].append(stats["refused_streams"])
                reference = statistics.median(cells["none"]["times"])
                for fault in faults:
                    cell = cells[fault]
                    times = cell["times"]
                    ratio = max(times) / reference
                    ok = cell["exact"] == args.runs and ratio <= 2.0
                    failed |= not ok
                    print(f"{latency:>5}ms {fault:<16} {args.runs:>4} {cell['exact']:>8} {cell['missing']:>7} "
                          f"{cell['duplicates']:>4} {statistics.median(times):>8.2f} "
                          f"{statistics.median(times) / reference:>6.2f}x {max(times):>7.2f} "
                          f"{ratio:>8.2f}x {statistics.mean(cell['goaways']):>6.1f} "
                          f"{statistics.mean(cell['dropped']):>6.1f} {statistics.mean(cell['opened']):>5.1f} "
                          f"{statistics.mean(cell['refused']):>7.1f}{'' if ok else '  MISSED'}", flush=True)
        finally:
            environment.close()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("MISSED the target in some cell" if failed else "OK: exactly one 200 per device, no publish over 2x")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
