#!/usr/bin/env python3
"""`make console-demo`: the release server with the console, sending to the local strict mock APNs instead of Apple.

Every answer the console shows (200 with apns-id, 410 Unregistered with its timestamp, BadDeviceToken, ...) comes
from the mock (Tests/Support/mock_apns.py), so the whole loop can be tried without an Apple key. Script an answer
for a token with the mock's control API, printed at start-up. Ctrl-C stops both processes.
"""
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))

from harness import INSTANCE_ID, SECRET, Mock, Server, write_apns_key  # noqa: E402


def main():
    os.environ.setdefault("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
    directory = Path(tempfile.mkdtemp(prefix="push-console-demo-"))
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, overrides={"console": {"enabled": True}})
    print(f"""
Console:     {server.base}/console
Instance id: {INSTANCE_ID}
Secret:      {SECRET}
APNs:        the strict mock; make a token answer 410 with
             curl -X PUT {mock.control}/behaviours/<token> -d '{{"status":410,"reason":"Unregistered"}}'
Register a device:
             curl -X POST {server.base}/device_api/v1/instances/{INSTANCE_ID}/devices/apns \\
               -H 'Content-Type: application/json' \\
               -d '{json.dumps({"token": "a1b2c3d4" * 8, "bundleIdentifier": "com.example.sdktest", "environment": "sandbox"})}'
Data:        {directory}   (Ctrl-C stops)
""", flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        mock.stop()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    main()
