#!/usr/bin/env python3
"""Crash durability at scale: kill -9 (and SIGTERM) the server in the middle of a 100,000-device fan-out.

Method (see Tests/sdk/crash.py): the release binary serves over TLS against the strict mock APNs; 100,000 devices
register on one interest through the device API (register + PUT interests, many keep-alive connections); the mock
stops recording requests (per-token counters stay); a publish starts; when the server has ~40% of its APNs answers
the server gets the signal; it is restarted on the same SQLite file; when the publish is `finished`, the mock's
per-token counts are compared with the registered tokens. Prints the numbers; exits 1 when any device is missing
or the publish's counts are not exact.
"""
import argparse
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))

from crash import CHECKPOINT_INTERVAL_S, crash_trial  # noqa: E402
from harness import Environment  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--signals", default="KILL,TERM", help="comma-separated: KILL, TERM")
    parser.add_argument("--stop-at", type=float, default=0.4, help="fraction of the APNs answers the server has when it is stopped")
    parser.add_argument("--concurrency", type=int, default=32, help="registration connections")
    parser.add_argument("--token-floor-scope", default="key", choices=("key", "connection"),
                        help="the mock's provider-token refresh floor: per signing key, as APNs (default), or per "
                             "connection, for an older build that signs a new token when restarted")
    args = parser.parse_args()

    failed = False
    with tempfile.TemporaryDirectory(prefix="kill9-") as directory:
        environment = Environment(Path(directory))
        try:
            for name in args.signals.split(","):
                stop = signal.Signals["SIG" + name.strip().upper()]
                print(f"== {stop.name}: {args.devices} devices, stop at {args.stop_at:.0%} of the fan-out", flush=True)
                result = crash_trial(environment, args.devices, stop, stop_fraction=args.stop_at,
                                     concurrency=args.concurrency, name=stop.name,
                                     token_floor_scope=args.token_floor_scope,
                                     log=lambda line: print("  " + line, flush=True))
                status = result["status"]
                bound = result["in_flight_window"] + result["fanout_rate"] * 2 * CHECKPOINT_INTERVAL_S
                exact = (status["targets"] == args.devices and status["apns"]["accepted"] == args.devices
                         and status["apns"]["failed"] == 0)
                print(f"  resumed: first APNs answer {result['resume_seconds']:.2f} s after /health answered")
                print(f"  missing devices: {result['missing']}")
                print(f"  duplicate deliveries: {result['duplicates']} (in-flight window {result['in_flight_window']}; "
                      f"window + 2 checkpoint intervals at {result['fanout_rate']:.0f}/s = {bound:.0f})")
                print(f"  publish counts exact (targets = accepted = {args.devices}, failed 0): {exact}")
                if stop == signal.SIGTERM:
                    print(f"  SIGTERM: exit code {result['exit_code']} after {result['stop_seconds']:.2f} s "
                          f"(drain bound 20 s)")
                    failed |= result["exit_code"] != 0
                failed |= result["missing"] != 0 or not exact
        finally:
            environment.close()
    print("FAILED" if failed else "OK: every device received the notification")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
