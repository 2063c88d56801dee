#!/usr/bin/env python3
"""Tracing overhead: the server's CPU per notification of an APNs fan-out with tracing off, and on with every span
sampled (`always_on`, ratio 1.0) and exported to the strict OTLP stand-in (Tests/Support/mock_otlp.py). Two
servers on the same machine with the same devices and the same strict mock APNs; publishes alternate between them
so that load from elsewhere hits both alike. CPU is the server process's utime + stime (/proc/PID/stat) from the
publish call to `finished`, divided by the devices: what the fan-out costs the server, the stand-ins excluded.
Prints each run, the medians and the ratio on/off. Usage:

    PUSH_SERVER_BIN=$PWD/.build/release/push-server .venv/bin/python3 bench/tracing/overhead.py [devices] [runs]
"""
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))
sys.path.insert(0, str(ROOT / "Tests" / "Support"))

from beams import Beams  # noqa: E402
from bulk import register_devices  # noqa: E402
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, Environment  # noqa: E402
from mock_otlp import OTLPReceiver  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main():
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    otlp = OTLPReceiver().start()
    environment = Environment(Path(tempfile.mkdtemp(prefix="tracing-bench-")))
    try:
        mock = environment.mock()
        common = {"limits": LOAD_TEST_LIMITS}
        servers = {
            "off": environment.server(mock, common, name="off"),
            "on": environment.server(mock, {**common, "tracing": {"enabled": True, "endpoint": otlp.url,
                                                                  "sampler": "always_on"}}, name="on"),
        }
        mock.configure(record=False)
        for label, server in servers.items():
            register_devices(server, INSTANCE_ID, [uuid.uuid4().hex * 2 for _ in range(devices)], "bench", concurrency=32)
        per_notification = {label: [] for label in servers}
        for run in range(runs + 1):
            for label, server in servers.items():
                beams = Beams(server)
                trace = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
                before, started = cpu_seconds(server.proc.pid), time.monotonic()
                r = beams.publish_raw("/interests", {"interests": ["bench"], "apns": {"aps": {"alert": "bench"}}},
                                      headers={"traceparent": trace})
                assert r.status_code == 200, r.text
                status = beams.wait_finished(r.json()["publishId"], timeout=600)
                elapsed, cpu = time.monotonic() - started, cpu_seconds(server.proc.pid) - before
                assert status["apns"]["accepted"] == devices, status
                if run == 0:
                    continue  # warm-up: connections, provider token, page cache
                per_notification[label].append(cpu / devices * 1e6)
                print(f"run {run} tracing {label:3}: {devices} notifications in {elapsed:.2f} s, "
                      f"CPU {cpu:.2f} s = {cpu / devices * 1e6:.1f} µs per notification")
        time.sleep(1)
        off, on = (statistics.median(per_notification[label]) for label in ("off", "on"))
        least_off, least_on = (min(per_notification[label]) for label in ("off", "on"))
        spans = len(otlp.spans())
        print(f"median CPU per notification: tracing off {off:.1f} µs, on (always_on) {on:.1f} µs, "
              f"ratio on/off {on / off:.3f}")
        print(f"least CPU per notification (the least disturbed run): off {least_off:.1f} µs, on {least_on:.1f} µs, "
              f"ratio on/off {least_on / least_off:.3f}")
        print(f"spans exported {spans}, receiver violations {len(otlp.violations)}")
    finally:
        environment.close()
        otlp.stop()


if __name__ == "__main__":
    main()
