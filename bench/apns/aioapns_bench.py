#!/usr/bin/env python3
"""The same N sends as the other APNs benchmark peers, with aioapns 4.0 (Python asyncio + h2), against a local
sink (bench/apns/nginx-sink.sh) or the strict mock. Prints notifications/s and CPU µs per notification.

    .venv/bin/pip install aioapns==4.0
    .venv/bin/python3 bench/apns/aioapns_bench.py --port 28443 --ca /tmp/apns-sink-28443/cert.pem --n 20000

How aioapns is pointed at a local peer (it has no URL option): the host and port are class attributes of its
protocol class (`APNS_SERVER`, `APNS_PORT`), so the script installs a subclass with 127.0.0.1 and the port on
the pool (`client.pool.protocol_class`). Trust is aioapns's own `ssl_context` option: a default context that
loads the peer's CA file, so TLS verification stays on (SNI/hostname is 127.0.0.1; the certs carry that IP).
aioapns offers no ALPN of its own; the context passed here offers `h2`, without which nginx answers HTTP/1.1
and drops aioapns's HTTP/2 preface.
The signing key is a throw-away P-256 `.p8` generated at start (the sink checks nothing; for the strict mock
pass --key-file/--key-id/--team-id matching its --key/--team-id).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ssl
import sys
import time

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

# The same 130-byte alert payload as h2load.sh and curl_multi_loop.c (aioapns serialises it with json.dumps
# default separators, which adds spaces: the bytes on the wire are a little larger, noted in RESULTS.md).
MESSAGE = {"aps": {"alert": {"title": "Benchmark", "body": "A notification body of a typical size for APNs pushes."},
                   "sound": "default"}, "id": 123}
TOKEN = "ab" * 32


def throwaway_p8() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


async def run(args: argparse.Namespace) -> int:
    key = open(args.key_file).read() if args.key_file else throwaway_p8()
    ctx = ssl.create_default_context(cafile=args.ca)
    # aioapns sets no ALPN (APNs evidently speaks h2 to it anyway); nginx needs ALPN h2 to speak HTTP/2.
    ctx.set_alpn_protocols(["h2"])
    client = APNs(key=key, key_id=args.key_id, team_id=args.team_id, topic=args.topic,
                  max_connections=args.connections, ssl_context=ctx)
    client.pool.protocol_class = type("LocalPeerProtocol", (APNsProductionClientProtocol,),
                                      {"APNS_SERVER": "127.0.0.1", "APNS_PORT": args.port})

    statuses: collections.Counter[str] = collections.Counter()
    remaining = args.n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            request = NotificationRequest(device_token=TOKEN, message=MESSAGE, priority=10,
                                          push_type=PushType.ALERT, time_to_live=0)
            try:
                result = await client.send_notification(request)
                statuses[result.status if result.is_successful else f"{result.status} {result.description}"] += 1
            except Exception as e:  # noqa: BLE001 - a benchmark counts failures instead of stopping
                statuses[type(e).__name__] += 1

    # Warm-up: one notification opens the first connection (TLS handshake) outside the measured window.
    await client.send_notification(NotificationRequest(device_token=TOKEN, message=MESSAGE,
                                                       push_type=PushType.ALERT))
    t0, c0 = time.monotonic(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(min(args.concurrency, args.n))))
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    connections = len(client.pool.connections)
    client.pool.close()
    print(f"aioapns n={args.n} concurrency={args.concurrency} max_connections={args.connections}: "
          f"{args.n / wall:.0f} notifications/s, {cpu * 1e6 / args.n:.1f} us CPU/notification "
          f"(wall {wall:.2f} s, cpu {cpu:.2f} s, connections {connections}, statuses {dict(statuses)})")
    return 0 if statuses.get("200", 0) == args.n else 1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca", required=True, help="CA file of the peer (nginx-sink.sh prints it)")
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=1000, help="notifications in flight (asyncio tasks)")
    p.add_argument("--connections", type=int, default=10, help="aioapns max_connections (its default: 10)")
    p.add_argument("--topic", default="com.example.app")
    p.add_argument("--key-file", help="a .p8 key (default: a throw-away key)")
    p.add_argument("--key-id", default="KEY1234567")
    p.add_argument("--team-id", default="TEAM123456")
    sys.exit(asyncio.run(run(p.parse_args())))


if __name__ == "__main__":
    main()
