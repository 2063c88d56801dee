#!/usr/bin/env python3
"""One interests publish to N HMS devices through the real binary and the HMS stand-in (Tests/Support/mock_hms.py),
timed from the publish call to `finished`: the HMS path end to end (store pages, `HMSDispatch` batches of up to
1000 tokens, one OAuth token, the stand-in's checks). The stand-in is Python, so the figure is a floor for the
server, not Huawei's rate; compare runs on the same machine. Usage:

    PUSH_SERVER_BIN=$PWD/.build/release/push-server .venv/bin/python3 bench/hms/fanout.py [devices] [runs]
"""
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "sdk"))

from beams import Beams  # noqa: E402
from harness import Mock, Server, write_apns_key  # noqa: E402
from platform_mocks import MockHMS  # noqa: E402

DEVICES = "/device_api/v1/instances/{}/devices/hms"


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    directory = Path(tempfile.mkdtemp(prefix="hms-bench-"))
    p8, pub = write_apns_key(directory)
    apns, hms = Mock(directory, pub), MockHMS(directory)
    server = Server(directory, apns, p8, instance_overrides={"hms": hms.config()})
    try:
        client = Beams(server)
        base = server.url(DEVICES.format(client.instance_id))

        def register(index):
            r = client.session.post(base, json={"token": f"IQAAAACy0bench{index:08d}AQ"}, timeout=30)
            r.raise_for_status()
            device = r.json()["id"]
            client.session.put(f"{base}/{device}/interests", json={"interests": ["bench"]}, timeout=30).raise_for_status()

        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(register, range(count)))
        print(f"registered {count} HMS devices in {time.monotonic() - started:.1f} s")
        for run in range(runs):
            before = hms.stats()
            started = time.monotonic()
            status = client.wait_finished(client.publish("interests", {"interests": ["bench"],
                                                                        "hms": {"notification": {"title": "t", "body": "b"}}}),
                                          timeout=300)
            elapsed = time.monotonic() - started
            after = hms.stats()
            assert status["hms"]["accepted"] == count, status
            print(f"run {run + 1}: {count} devices in {elapsed:.2f} s = {count / elapsed:,.0f}/s; "
                  f"{after['sends'] - before['sends']} requests, {after['token_requests'] - before['token_requests']} token requests")
    finally:
        for process in (server, apns, hms):
            process.stop()


if __name__ == "__main__":
    main()
