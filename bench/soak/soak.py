#!/usr/bin/env python3
"""Soak benchmark: legitimate traffic alone, then the same traffic beside an abusive client.

Legitimate clients (source address 127.0.0.5, so per-IP limits tell them from the abuser) keep an open-loop
schedule: new devices register and subscribe to `news`, publishes go to `news` (fanned out to the APNs sink) and
to `few` (intake), and publish statuses are read. Every request's latency is recorded per phase.
Phase 1 (quiet) runs only that; phase 2 adds `wrk` on the anonymous routes (bench/soak/abuse.lua) at the abuse
rate from 127.0.0.1. Every 10 s the server's RSS, the /metrics size and the database size are sampled.

Prints per-phase p50/p99 and the p99 ratio (abusive / quiet), the legitimate non-2xx count (must be 0), the
abuser's totals, and the samples' first/last/max. Stops by itself; only loopback addresses are used.
"""
import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time

LEGIT_SOURCE = "127.0.0.5"


class Client:
    """One keep-alive HTTP/1.1 connection from the legitimate source address (re-opened when closed)."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None

    async def request(self, method, path, body=None, headers=None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(
                "127.0.0.1", self.port, local_addr=(LEGIT_SOURCE, 0))
        data = b"" if body is None else json.dumps(body).encode()
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(data)}"]
        if body is not None:
            head.append("Content-Type: application/json")
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        try:
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("closed")
            status = int(status_line.split()[1])
            length, close = 0, False
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() == "connection" and value.strip().lower() == "close":
                    close = True
            payload = await self.reader.readexactly(length) if length else b""
        except (ConnectionError, asyncio.IncompleteReadError):
            self.writer.close()
            self.writer = None
            raise
        if close:
            self.writer.close()
            self.writer = None
        return status, payload


class Phase:
    def __init__(self, name):
        self.name = name
        self.latencies = {}
        self.bad = {}

    def record(self, kind, seconds, status):
        self.latencies.setdefault(kind, []).append(seconds)
        if not 200 <= status < 300:
            self.bad[(kind, status)] = self.bad.get((kind, status), 0) + 1

    def all(self):
        return sorted(x for v in self.latencies.values() for x in v)


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


async def legit(args, phase, seconds):
    base = f"/device_api/v1/instances/{args.instance}/devices/apns"
    pub = f"/publish_api/v1/instances/{args.instance}/publishes"
    auth = {"Authorization": f"Bearer {args.secret}"}
    deadline = time.monotonic() + seconds
    publish_ids = []

    async def timed(client, kind, method, path, body=None, headers=None):
        t0 = time.perf_counter()
        try:
            status, payload = await client.request(method, path, body, headers)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            status, payload = 599, b""
        phase.record(kind, time.perf_counter() - t0, status)
        return status, payload

    async def every(interval, action):
        client = Client(args.port)
        next_at = time.monotonic()
        while next_at < deadline:
            await action(client)
            next_at += interval
            await asyncio.sleep(max(0, next_at - time.monotonic()))

    async def register(client):
        token = "%064x" % random.getrandbits(256)
        status, payload = await timed(client, "register", "POST", base,
                                      {"token": token, "bundleIdentifier": "com.example.app"})
        if status == 200:
            device = json.loads(payload)["id"]
            await timed(client, "subscribe", "POST", f"{base}/{device}/interests/news")

    async def publish_news(client):
        status, payload = await timed(client, "publish-fanout", "POST", f"{pub}/interests",
                                      {"interests": ["news"], "apns": {"aps": {"alert": "soak"}}}, auth)
        if status == 200:
            publish_ids.append(json.loads(payload)["publishId"])

    async def publish_few(client):
        await timed(client, "publish-intake", "POST", f"{pub}/interests",
                    {"interests": ["few"], "apns": {"aps": {"alert": "soak"}}}, auth)

    async def status(client):
        if publish_ids:
            await timed(client, "status", "GET", f"{pub}/{publish_ids[-1]}", None, auth)

    await asyncio.gather(
        every(1 / args.register_rate, register),
        every(args.fanout_every, publish_news),
        every(1 / args.intake_rate, publish_few),
        every(1.0, status),
    )


def sample(args, pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    db = sum(os.path.getsize(args.db + s) for s in ("", "-wal", "-shm") if os.path.exists(args.db + s))
    cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{size_download}", f"http://127.0.0.1:{args.port}/metrics"]
    if args.ops_token:
        cmd[1:1] = ["-H", f"Authorization: Bearer {args.ops_token}"]
    metrics = int(subprocess.run(cmd, capture_output=True, text=True).stdout or 0)
    return {"t": time.monotonic(), "rss_mib": rss, "metrics_bytes": metrics, "db_mib": db / 2**20}


async def sampler(args, pid, out, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out.append(await asyncio.to_thread(sample, args, pid))
        await asyncio.sleep(10)


async def run_phase(args, name, seconds, abuse):
    phase = Phase(name)
    samples = []
    wrk = None
    if abuse:
        env = dict(os.environ, INSTANCE=args.instance, ABUSE_DELAY_MS=str(args.abuse_delay_ms))
        wrk = subprocess.Popen(["wrk", "-t2", f"-c{args.abuse_connections}", f"-d{seconds}s", "-s",
                                os.path.join(os.path.dirname(__file__), "abuse.lua"),
                                f"http://127.0.0.1:{args.port}"], env=env, stdout=subprocess.PIPE, text=True)
    await asyncio.gather(legit(args, phase, seconds), sampler(args, args.pid, samples, seconds))
    abuser = ""
    if wrk:
        abuser = wrk.communicate(timeout=seconds + 60)[0]
    return phase, samples, abuser


def report(phase, samples):
    allv = phase.all()
    print(f"-- {phase.name}: {len(allv)} legitimate requests, p50 {pct(allv, .5) * 1e3:.2f} ms, "
          f"p99 {pct(allv, .99) * 1e3:.2f} ms")
    for kind, v in sorted(phase.latencies.items()):
        print(f"   {kind:15s} n={len(v):6d}  p50 {pct(v, .5) * 1e3:7.2f} ms  p99 {pct(v, .99) * 1e3:7.2f} ms")
    bad = sum(phase.bad.values())
    print(f"   legitimate non-2xx: {bad} {dict(phase.bad) if bad else ''}")
    if samples:
        for key in ("rss_mib", "metrics_bytes", "db_mib"):
            vals = [s[key] for s in samples]
            print(f"   {key:14s} first {vals[0]:10.1f}  last {vals[-1]:10.1f}  max {max(vals):10.1f}")
    return pct(allv, .99), bad


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--instance", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--ops-token", default="")
    ap.add_argument("--quiet-seconds", type=int, default=120)
    ap.add_argument("--abuse-seconds", type=int, default=600)
    ap.add_argument("--register-rate", type=float, default=10.0)
    ap.add_argument("--intake-rate", type=float, default=5.0)
    ap.add_argument("--fanout-every", type=float, default=5.0)
    ap.add_argument("--abuse-connections", type=int, default=50)
    ap.add_argument("--abuse-delay-ms", type=int, default=10)
    ap.add_argument("--no-abuser", action="store_true",
                    help="run phase 2 without the abuser: a same-length reference for the store's own drift")
    args = ap.parse_args()
    rate = args.abuse_connections * 1000 / args.abuse_delay_ms
    second = ("without an abuser (reference)" if args.no_abuser else
              f"with an abuser at ~{rate:.0f} req/s (wrk -t2 -c{args.abuse_connections}, {args.abuse_delay_ms} ms pacing)")
    print(f"== soak: quiet {args.quiet_seconds} s, then {args.abuse_seconds} s {second}; legitimate: "
          f"{args.register_rate}/s register+subscribe, {args.intake_rate}/s publish intake, a fan-out publish "
          f"every {args.fanout_every} s, 1/s status; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    quiet, quiet_samples, _ = await run_phase(args, "quiet", args.quiet_seconds, False)
    abusive, abusive_samples, abuser = await run_phase(
        args, "phase 2 without abuser" if args.no_abuser else "under abuse", args.abuse_seconds, not args.no_abuser)
    q99, _ = report(quiet, quiet_samples)
    a99, bad = report(abusive, abusive_samples)
    print("   " + abuser.strip().replace("\n", "\n   "))
    print(f"== legitimate p99 phase 2 / phase 1: {a99 / q99:.2f}x (target under abuse <= 2x); legitimate non-2xx in "
          f"phase 2: {bad}")


if __name__ == "__main__":
    asyncio.run(main())
