#!/usr/bin/env python3
"""`make console-demo`: the release server with the console, sending to local strict stand-ins instead of Apple,
Google and the browsers' push services.

Every answer the console shows (200 with apns-id, 410 Unregistered with its timestamp, BadDeviceToken, FCM's
UNREGISTERED, a push service's 201, ...) comes from the stand-ins in Tests/Support (mock_apns.py, mock_fcm.py,
mock_push_service.py, which decrypts every Web Push message as the browser would), so the whole loop can be tried
without an Apple key, a Firebase project or a browser. An Android device and a browser are registered on the
interest `hello` at start-up: publish to it from the console with "Android" and "Web" ticked. Script answers with
the stand-ins' control APIs, printed at start-up. Ctrl-C stops every process.
"""
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))

from harness import INSTANCE_ID, SECRET  # noqa: E402
from test_publish_platforms import Platforms, fcm_token  # noqa: E402


def main():
    os.environ.setdefault("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
    directory = Path(tempfile.mkdtemp(prefix="push-console-demo-"))
    env = Platforms(directory, overrides={"console": {"enabled": True}})
    android = fcm_token()
    env.register("fcm", android, ["hello"])
    browser, _ = env.browser(["hello"])
    print(f"""
Console:     {env.server.base}/console
Instance id: {INSTANCE_ID}
Secret:      {SECRET}
APNs:        the strict mock; make a token answer 410 with
             curl -X PUT {env.apns.control}/behaviours/<token> -d '{{"status":410,"reason":"Unregistered"}}'
FCM:         the strict stand-in; Android device on "hello" with token {android[:16]}…
             make every send answer 403 PERMISSION_DENIED (then see Overview and /ready):
             curl -X PUT {env.fcm.control}/behaviours/'*' -d '{{"answer":"denied"}}'
Web Push:    the strict push service; browser {browser["id"]} on "hello"; what it decrypted:
             curl {env.push.control}/messages
Register an iPhone:
             curl -X POST {env.server.base}/device_api/v1/instances/{INSTANCE_ID}/devices/apns \\
               -H 'Content-Type: application/json' \\
               -d '{json.dumps({"token": "a1b2c3d4" * 8, "bundleIdentifier": "com.example.sdktest", "environment": "sandbox"})}'
Data:        {directory}   (Ctrl-C stops)
""", flush=True)
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        env.close()


def interrupted(*_):
    raise KeyboardInterrupt


if __name__ == "__main__":
    # A handler, not a blocked signal mask: the stand-ins inherit the mask, and with SIGTERM blocked they would
    # ignore the terminate that stops them.
    signal.signal(signal.SIGTERM, interrupted)
    main()
