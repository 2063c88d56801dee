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
        self.started = time.monotonic()
        self.latencies = {}
        self.timeline = []
        self.bad = {}

    def record(self, kind, seconds, status):
        self.latencies.setdefault(kind, []).append(seconds)
        self.timeline.append((time.monotonic() - self.started, kind, seconds))
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
            # Past the audience cap, devices follow one of 100 other interests: the database keeps growing while
            # the fan-out's work per publish stays the same.
            args.registered += 1
            interest = "news" if not args.audience or args.registered <= args.audience else \
                f"topic-{args.registered % 100}"
            await timed(client, "subscribe", "POST", f"{base}/{device}/interests/{interest}")

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


def smaps(pid):
    """RSS split by kind (MiB) from /proc/PID/smaps_rollup: anonymous memory (heap, SQLite's page caches) vs file
    pages (the binary, libraries, the database's mapped -shm)."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("Rss", "Anonymous", "Shared_Clean", "Private_Dirty"):
                out[name] = int(rest.split()[0]) / 1024
    return out


def database_size(args):
    """(database MiB, WAL MiB): the files for SQLite, pg_database_size (and the cluster's pg_wal) for PostgreSQL."""
    if args.pg:
        out = subprocess.run(["psql", "-X", "-A", "-t", "-d", args.pg, "-c",
                              "SELECT pg_database_size(current_database()), "
                              "(SELECT coalesce(sum(size), 0) FROM pg_ls_waldir())"],
                             capture_output=True, text=True).stdout.strip()
        db, _, wal = out.partition("|")
        return int(db or 0) / 2**20, int(wal or 0) / 2**20
    size = {s: os.path.getsize(args.db + s) if os.path.exists(args.db + s) else 0 for s in ("", "-wal", "-shm")}
    return (size[""] + size["-shm"]) / 2**20, size["-wal"] / 2**20


def sample(args, pid):
    memory = smaps(pid)
    rss = memory.get("Rss", 0)
    db, wal = database_size(args)
    cmd = ["curl", "-s", f"http://127.0.0.1:{args.port}/metrics"]
    if args.ops_token:
        cmd[1:1] = ["-H", f"Authorization: Bearer {args.ops_token}"]
    body = subprocess.run(cmd, capture_output=True).stdout
    gauges = memory_gauges(body.decode(errors="replace"))
    value = {"t": time.monotonic(), "rss_mib": rss, "anon_mib": memory.get("Anonymous", 0), "metrics_bytes": len(body),
             "db_mib": db, "wal_mib": wal, **gauges}
    if args.samples:
        heap = (f", heap in use {gauges['heap_in_use_mib']:.1f} mapped {gauges.get('heap_mapped_mib', 0):.1f} "
                f"free {gauges['heap_free_mib']:.1f}"
                if "heap_in_use_mib" in gauges else "")
        heap += f", sqlite {gauges['sqlite_mib']:.1f}" if "sqlite_mib" in gauges else ""
        print(f"   sample {time.strftime('%H:%M:%S')}: rss {rss:.1f} MiB (anon {value['anon_mib']:.1f}{heap}), "
              f"db {db:.1f} MiB, wal {wal:.1f} MiB, metrics {len(body)} B, load {os.getloadavg()[0]:.2f}", flush=True)
    return value


def memory_gauges(metrics):
    """The server's own memory gauges (MiB), where its /metrics has them: the C heap in use and kept free, and
    SQLite's caches, which tell a growing RSS's live data from retained free memory."""
    names = {'push_process_heap_bytes{state="in_use"}': "heap_in_use_mib",
             'push_process_heap_bytes{state="free"}': "heap_free_mib",
             'push_process_heap_bytes{state="mapped"}': "heap_mapped_mib",
             "push_store_sqlite_memory_bytes": "sqlite_mib"}
    found = {}
    for line in metrics.splitlines():
        name, _, value = line.rpartition(" ")
        if name in names:
            found[names[name]] = float(value) / 2**20
    return found


async def sampler(args, pid, out, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out.append(await asyncio.to_thread(sample, args, pid))
        await asyncio.sleep(args.sample_every)


async def run_phase(args, name, seconds, abuse):
    phase = Phase(name)
    samples = []
    wrk = None
    if abuse:
        env = dict(os.environ, INSTANCE=args.instance, ABUSE_DELAY_MS=str(args.abuse_delay_ms))
        wrk = subprocess.Popen(["wrk", "-t2", f"-c{args.abuse_connections}", f"-d{seconds}s", "-s",
                                os.path.join(os.path.dirname(__file__), "abuse.lua"),
                                f"http://127.0.0.1:{args.port}"], env=env, stdout=subprocess.PIPE, text=True)
    if seconds <= 0:
        return phase, samples, ""
    await asyncio.gather(legit(args, phase, seconds), sampler(args, args.pid, samples, seconds),
                         windows(args, phase, seconds))
    abuser = ""
    if wrk:
        abuser = wrk.communicate(timeout=seconds + 60)[0]
    return phase, samples, abuser


def window_line(phase, start, end, load=True):
    values = [x for t, _, x in phase.timeline if start <= t < end]
    writes = [x for t, kind, x in phase.timeline if start <= t < end and kind in ("register", "subscribe", "publish-intake")]
    return (f"   window {start / 60:5.1f}-{end / 60:5.1f} min: n={len(values):6d}  p50 {pct(values, .5) * 1e3:6.2f} ms  "
            f"p99 {pct(values, .99) * 1e3:7.2f} ms  (writes p99 {pct(writes, .99) * 1e3:7.2f} ms)"
            + (f"  load {os.getloadavg()[0]:.2f}" if load else "")), pct(values, .99)


async def windows(args, phase, seconds):
    """Prints the p99 of each finished window while the phase runs (a long soak shows its trend as it goes)."""
    start = 0
    while start + args.window <= seconds:
        await asyncio.sleep(max(0, phase.started + start + args.window - time.monotonic()))
        print(window_line(phase, start, start + args.window)[0], flush=True)
        start += args.window


def report(phase, samples):
    allv = phase.all()
    print(f"-- {phase.name}: {len(allv)} legitimate requests, p50 {pct(allv, .5) * 1e3:.2f} ms, "
          f"p99 {pct(allv, .99) * 1e3:.2f} ms")
    for kind, v in sorted(phase.latencies.items()):
        print(f"   {kind:15s} n={len(v):6d}  p50 {pct(v, .5) * 1e3:7.2f} ms  p99 {pct(v, .99) * 1e3:7.2f} ms")
    bad = sum(phase.bad.values())
    print(f"   legitimate non-2xx: {bad} {dict(phase.bad) if bad else ''}")
    if samples:
        for key in ("rss_mib", "anon_mib", "heap_in_use_mib", "heap_mapped_mib", "heap_free_mib",
                    "sqlite_mib", "metrics_bytes", "db_mib",
                    "wal_mib"):
            vals = [s[key] for s in samples if key in s]
            if not vals:
                continue
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
    ap.add_argument("--pg", default="", help="a PostgreSQL connection string: the database the server uses")
    ap.add_argument("--audience", type=int, default=0,
                    help="only the first N devices follow `news` (the fan-out); later ones follow other interests "
                         "(0: every device follows `news`, so the fan-out grows with the database)")
    ap.add_argument("--window", type=float, default=60, help="seconds per p99 window printed as the run goes")
    ap.add_argument("--drift-window", type=float, default=600, help="seconds per window of the final drift report")
    ap.add_argument("--sample-every", type=float, default=10, help="seconds between RSS/database samples")
    ap.add_argument("--samples", action="store_true", help="print every sample as it is taken")
    ap.add_argument("--no-abuser", action="store_true",
                    help="run phase 2 without the abuser: a same-length reference for the store's own drift")
    args = ap.parse_args()
    args.registered = 0
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
    drift(args, quiet, quiet_samples)
    if args.abuse_seconds <= 0:
        return
    a99, bad = report(abusive, abusive_samples)
    drift(args, abusive, abusive_samples)
    print("   " + abuser.strip().replace("\n", "\n   "))
    print(f"== legitimate p99 phase 2 / phase 1: {a99 / q99:.2f}x (target under abuse <= 2x); legitimate non-2xx in "
          f"phase 2: {bad}")


def drift(args, phase, samples):
    """The long-run view: p99 per drift window, the last window's p99 against the first's, and RSS per window."""
    length = phase.timeline[-1][0] if phase.timeline else 0
    if length < 2 * args.drift_window:
        return
    # The last request starts a moment before the phase's end: a window is whole within a second of its end.
    count = int((length + 1) // args.drift_window)
    p99s = []
    for i in range(count):
        line, p99 = window_line(phase, i * args.drift_window, (i + 1) * args.drift_window, load=False)
        rss = [s["rss_mib"] for s in samples
               if i * args.drift_window <= s["t"] - phase.started < (i + 1) * args.drift_window]
        print(line + (f"  rss {min(rss):.0f}-{max(rss):.0f} MiB" if rss else ""))
        p99s.append(p99)
    print(f"== {phase.name}: p99 last {args.drift_window / 60:.0f} min / first {args.drift_window / 60:.0f} min: "
          f"{p99s[-1] / p99s[0]:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    asyncio.run(main())
