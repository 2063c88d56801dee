#!/usr/bin/env python3
"""Instance B's publish latency while instance A runs paced campaigns on the same node (issue 25, publish slots).

  PUSH_SERVER_BIN=BINARY .venv/bin/python bench/slots/paced_neighbour.py [CAMPAIGNS] [SECONDS]

Starts the binary and the strict APNs mock (Tests/sdk/harness.py, SQLite; PUSH_TEST_STORE=postgresql for a
throwaway PostgreSQL cluster), with a second instance B on the same mock. Instance A publishes CAMPAIGNS (8)
interest publishes with `x_delivery.throttlePerMinute: 1` to two devices (each sends one device at once, the other a
minute later); then B publishes to one device every 0.5 s for SECONDS (10), and the script prints B's time from
publish request to first delivery at the mock: p50, p99, max, and how many never arrived within 70 s."""
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))

from beams import Beams, alert, random_token, unique, wait_for  # noqa: E402
from harness import Environment  # noqa: E402
from test_publish_slots import OTHER_ID, OTHER_SECRET, two_instance_server  # noqa: E402

campaigns = int(sys.argv[1]) if len(sys.argv) > 1 else 8
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
environment = Environment(Path(tempfile.mkdtemp(prefix="slots-bench-")))
try:
    mock = environment.mock()
    server = two_instance_server(environment, mock, "bench")
    a, b = Beams(server), Beams(server, OTHER_ID, OTHER_SECRET)
    interest = unique("campaign")
    for _ in range(2):
        a.register(random_token(), [interest])
    ids = [a.publish("interests", {"interests": [interest], "apns": alert("campaign"),
                                   "x_delivery": {"throttlePerMinute": 1}}) for _ in range(campaigns)]
    wait_for(lambda: mock.stats()["requests"] >= campaigns, timeout=30, message="the campaigns' first deliveries")
    sent = []
    deadline = time.time() + seconds
    while time.time() < deadline:
        token, name = random_token(), unique("reset")
        b.register(token, [name])
        sent.append((token, time.time()))
        b.publish("interests", {"interests": [name], "apns": alert("now")})
        time.sleep(0.5)
    latencies, missing = [], 0
    for token, started in sent:
        try:
            got = wait_for(lambda: mock.requests_for(token), timeout=max(1, started + 70 - time.time()))
            latencies.append((got[0]["time"] - started) * 1000)
        except Exception:  # noqa: BLE001  (counted, not raised)
            missing += 1
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] if latencies else float("nan")

    print(f"{os.environ.get('PUSH_SERVER_BIN', 'push-server')}: {campaigns} paced campaigns of A; {len(sent)} one-device "
          f"publishes of B: p50 {pct(50):.0f} ms, p99 {pct(99):.0f} ms, max {latencies[-1] if latencies else float('nan'):.0f} ms, "
          f"{missing} not delivered within 70 s")
finally:
    environment.close()
