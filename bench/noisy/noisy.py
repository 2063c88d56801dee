#!/usr/bin/env python3
"""Noisy-neighbour benchmark (issue 25): does one tenant, client or destination slow another one down?

    bench/noisy/run.sh [--phase-seconds 30] [--fanout 100000] [--only quiet,campaigns,...]
                       [--publish-every 0.1] [--register-every 0.05]

Instance B is the neighbour that must not notice: from 127.0.0.5 it publishes a one-device transactional
notification every 100 ms (to the strict mock APNs, Tests/Support/mock_apns.py, which records when each request
arrived) and registers a device every 50 ms, from a process of its own (`Neighbour`), so the noise's event loop
never delays B's requests or its clock. The rates give 200 publishes and 400 registrations in a 20 s phase, so a
p99 is the 2nd and 4th slowest sample rather than the slowest (one publish a second, as issue 25 words it, made
p99 the maximum of 20; `--publish-every 1` still runs that). Instance A and an anonymous attacker make noise, one
kind per phase and then all at once:

- `connections`: the attacker holds 128 keep-alive connections from each of 40 addresses (127.0.1.x; each IPv6 /64
  is another address) and sends `GET /health` on each every 30 s.
- `interests`: the attacker registers devices on A and sends `PUT …/interests` with 5,000 distinct 164-byte names,
  from 8 addresses, obeying every 429's `Retry-After` (under the default `limits.ipInterestsPerSecond`, 100 names/s on
  a bucket of 5,000, each address gets one set at once and then a 429 of about 50 s).
- `blackhole`: the attacker registers 600 Web Push subscriptions on A whose endpoint is on an allowed push-service
  host (127.0.0.9) but a port that drops connection attempts (a full accept queue), following A's `campaign`
  interest; A publishes to `campaign` every 5 s.
- `campaigns`: A runs eight paced publishes (`x_delivery.throttlePerMinute: 60`) to its 2,000 `paced` devices.
- `fanout`: A publishes once to its `fanout` interest (100,000 devices by default, seeded before the start).
- `webhooks`: A publishes every second with a `webhookUrl` that accepts and never answers.
- `slow-apns`: A's APNs peer (the nginx sink) answers after 2 s in every phase; this phase adds only A's
  unthrottled 2,000-device publish every 10 s, so its streams wait on the slow answers.
- `all`: every kind above at once.
A's publishes still running at the end of a phase are cancelled (`DELETE …/publishes/{id}`) before the next.

Printed per phase: B's time from publish to its notification reaching the mock (p50, p99, max; ratio of p99 to the
quiet phase's), B's registration latency (p50, p99, ratio), the server's CPU (share of one core), its database
growth (MiB, and per hour at that rate) and, for the attacker, requests by status. `--dump DIR` writes each phase's
raw samples with their start times (and when the attacker's requests were answered), to tell a burst from a stall. The server runs its default
limits. Only loopback addresses are used; nothing touches the internet.
"""
import argparse
import asyncio
import json
import os
import random
import secrets
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))
sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import harness  # noqa: E402
from mock_otlp import OTLPReceiver  # noqa: E402
import requests  # noqa: E402

B_SOURCE = "127.0.0.5"
BLACKHOLE_HOST = "127.0.0.9"
A_ID = "5b7f0c1e-8d2a-4c3b-9e6f-1a2b3c4d5e6f"
A_SECRET = "noisy-bench-instance-a-secret-0123456789"
PHASES = ["quiet", "connections", "interests", "blackhole", "campaigns", "fanout", "webhooks", "slow-apns", "all"]


def pct(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class HTTP:
    """One keep-alive HTTP/1.1 connection from a chosen source address; re-opened when the server closes it."""

    def __init__(self, port, source):
        self.port, self.source = port, source
        self.reader = self.writer = None

    async def request(self, method, path, body=None, headers=None, raw=None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port,
                                                                     local_addr=(self.source, 0))
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(data)}"]
        if body is not None or raw is not None:
            head.append("Content-Type: application/json")
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        try:
            self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("closed")
            status = int(line.split()[1])
            length, close, retry_after = 0, False, None
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name = name.lower()
                if name == "content-length":
                    length = int(value)
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
                elif name == "retry-after":
                    retry_after = float(value)
            payload = await self.reader.readexactly(length) if length else b""
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            self.close()
            raise
        if close:
            self.close()
        return status, payload, retry_after

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.writer = None


class Tally:
    def __init__(self):
        self.delivery, self.register, self.statuses = [], [], {}
        # (started, arrived at the mock, publish id) per delivered publish of B, for `--trace`'s hops.
        self.samples = []
        # When each registration started (wall clock), beside `register`, for `--dump`.
        self.register_at = []
        # When each of the attacker's requests was answered (wall clock), for `--dump`.
        self.noise_at = []
        self.lost = 0

    def status(self, who, status):
        key = f"{who} {status}"
        self.statuses[key] = self.statuses.get(key, 0) + 1


class Neighbour:
    """Instance B, the neighbour that must not notice, in a process of its own (`--neighbour`): its requests and
    their timing share no event loop (and no interpreter lock) with the noise, which builds 820 KB bodies and
    serves thousands of held connections; timed in the noise's loop, a registration's latency included every
    stall of that loop, not the server's. The parent says `start` and `stop` on stdin; after `stop` the child
    waits for B's last notifications and prints the phase's samples as one JSON line."""

    def __init__(self, port, control, publish_every, register_every):
        self.port, self.control = port, control
        self.publish_every, self.register_every = publish_every, register_every
        self.waiting = {}
        self.publish_ids = {}
        self.stop = asyncio.Event()
        self.tally = Tally()

    async def main(self):
        await self.b_setup()
        watcher = asyncio.get_running_loop().create_task(self.b_watcher())
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        print("ready", flush=True)
        tasks = []
        while line := (await reader.readline()).decode().strip():
            if line == "start":
                self.stop, self.tally, self.waiting, self.publish_ids = asyncio.Event(), Tally(), {}, {}
                tasks = [asyncio.get_running_loop().create_task(f()) for f in (self.b_publisher, self.b_registrar)]
            elif line == "stop":
                self.stop.set()
                await asyncio.wait(tasks, timeout=40)
                # B's last notifications get their chance to arrive before the phase is judged; what never
                # arrives is lost.
                for _ in range(600):
                    if not self.waiting:
                        break
                    await asyncio.sleep(0.1)
                print(json.dumps({"delivery": self.tally.delivery, "register": self.tally.register,
                                  "register_at": self.tally.register_at,
                                  "lost": len(self.waiting), "statuses": self.tally.statuses,
                                  "samples": [[started, arrived, self.publish_ids.get(title)]
                                              for started, arrived, title in self.tally.samples]}), flush=True)
        watcher.cancel()

    async def sleep_until(self, when):
        try:
            await asyncio.wait_for(self.stop.wait(), max(0.0, when - time.time()))
        except asyncio.TimeoutError:
            pass

    async def b_setup(self):
        http = HTTP(self.port, B_SOURCE)
        self.b_token = secrets.token_hex(32)
        status, body, _ = await http.request("POST", f"/device_api/v1/instances/{harness.INSTANCE_ID}/devices/apns",
                                             {"token": self.b_token, "bundleIdentifier": "com.example.app"})
        assert status == 200, body
        device = json.loads(body)["id"]
        status, body, _ = await http.request(
            "PUT", f"/device_api/v1/instances/{harness.INSTANCE_ID}/devices/apns/{device}/interests",
            {"interests": ["b-alerts"]})
        assert status == 200, body
        http.close()

    async def b_publisher(self):
        http = HTTP(self.port, B_SOURCE)
        auth = {"Authorization": f"Bearer {harness.SECRET}"}
        n = 0
        while not self.stop.is_set():
            n += 1
            title = f"b-{n}-{uuid.uuid4().hex[:8]}"
            body = {"interests": ["b-alerts"], "apns": {"aps": {"alert": {"title": title, "body": "reset code"}}}}
            started = time.time()
            # Awaited before the request goes out: the notification can reach the mock (and the watcher) before
            # the 200 reaches us, and one registered after that would never be matched (counted lost).
            self.waiting[title] = started
            try:
                status, payload, _ = await http.request(
                    "POST", f"/publish_api/v1/instances/{harness.INSTANCE_ID}/publishes/interests", body, auth)
                self.tally.status("B publish", status)
                if status != 200:
                    self.waiting.pop(title, None)
                else:
                    self.publish_ids[title] = json.loads(payload).get("publishId")
            except (ConnectionError, OSError) as error:
                self.waiting.pop(title, None)
                self.tally.status("B publish", type(error).__name__)
            await self.sleep_until(started + self.publish_every)

    async def b_watcher(self):
        """Polls the mock's record of B's device (only what arrived since the last poll) and matches arrivals to the
        publishes waiting for them: publish → arrival at the APNs peer."""
        seen = 0
        while True:
            records = await asyncio.to_thread(
                lambda: requests.get(f"{self.control}/requests",
                                             params={"token": self.b_token, "since": seen}, timeout=5).json())
            for record in records:
                seen = max(seen, record["seq"])
                alert = ((record.get("payload") or {}).get("aps") or {}).get("alert") or {}
                title = alert.get("title") if isinstance(alert, dict) else None
                started = self.waiting.pop(title, None)
                if started is not None:
                    self.tally.delivery.append(record["time"] - started)
                    self.tally.samples.append([started, record["time"], title])
            await asyncio.sleep(0.05)

    async def b_registrar(self):
        http = HTTP(self.port, B_SOURCE)
        while not self.stop.is_set():
            started = time.monotonic()
            wall = time.time()
            try:
                status, _, _ = await http.request(
                    "POST", f"/device_api/v1/instances/{harness.INSTANCE_ID}/devices/apns",
                    {"token": secrets.token_hex(32), "bundleIdentifier": "com.example.app"})
                self.tally.register.append(time.monotonic() - started)
                self.tally.register_at.append(wall)
                self.tally.status("B register", status)
            except (ConnectionError, OSError) as error:
                self.tally.status("B register", type(error).__name__)
            await asyncio.sleep(max(0.0, started + self.register_every - time.monotonic()))


class Bench:
    def __init__(self, args, directory):
        self.args, self.dir = args, directory
        self.a_publishes = []
        self.stop = asyncio.Event()
        self.tally = Tally()
        self.neighbour = None

    # MARK: setup

    def start(self):
        d = self.dir
        self.p8, pub = harness.write_apns_key(d)
        self.mock = harness.Mock(d, pub)
        self.sink_port = harness.free_port()
        sink = subprocess.run([str(ROOT / "bench/apns/nginx-sink.sh"), "start", str(self.sink_port), "2000"],
                              env={**os.environ, "SINK_DIR": str(d / "sink")}, capture_output=True, text=True,
                              check=True)
        self.sink_ca = sink.stdout.strip().splitlines()[-1]
        self.blackhole = self.open_blackhole()
        vapid = d / "vapid.pem"
        subprocess.run([self.binary, "vapid-keygen", str(vapid)], check=True, capture_output=True)
        seeder = ROOT / ".build/release/SeedDevices"
        for interest, count, seed in (("fanout", self.args.fanout, 1), ("paced", 2000, 2)):
            subprocess.run([str(seeder), "--db", str(d / "push.sqlite"), "--instance", A_ID, "--interest", interest,
                            "--count", str(count), "--seed", str(seed)], check=True, capture_output=True)
        a = {"id": A_ID, "secretKey": A_SECRET,
             "apns": {"teamId": harness.TEAM_ID, "keyId": harness.KEY_ID, "keyPath": str(self.p8),
                      "topic": harness.TOPIC, "defaultEnvironment": "sandbox",
                      "endpointOverride": f"https://127.0.0.1:{self.sink_port}", "caFile": self.sink_ca},
             "web": {"vapidKeyFile": str(vapid), "subject": "mailto:ops@example.com",
                     "pushServiceHosts": [f"{BLACKHOLE_HOST}:{self.blackhole_port}"],
                     "allowedDestinations": [BLACKHOLE_HOST]}}
        # `limits: {}` keeps every default limit (the harness lifts the per-address one for the test suites).
        overrides = {"limits": {}, "log": {"level": "notice"}}
        self.otlp = None
        if self.args.trace:
            # `--trace`: every publish traced to the strict OTLP stand-in, to time the hops of B's publishes.
            self.otlp = OTLPReceiver().start()
            overrides["tracing"] = {"enabled": True, "endpoint": self.otlp.url, "scheduleDelayMillis": 500,
                                    "maxQueueSize": 65536}
        self.server = harness.Server(d, self.mock, self.p8, overrides=overrides, extra_instances=[a])
        self.pid = self.server.proc.pid
        self.port = self.server.port

    @property
    def binary(self):
        return os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build/release/push-server"))

    def open_blackhole(self):
        """A listener whose accept queue is full and never drained: the kernel drops further SYNs, so a connection
        attempt hangs until the client's own connect timeout, as a filtered port on the internet does."""
        listener = socket.socket()
        listener.bind((BLACKHOLE_HOST, 0))
        listener.listen(0)
        self.blackhole_port = listener.getsockname()[1]
        self.blackhole_fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect((BLACKHOLE_HOST, self.blackhole_port))
            except BlockingIOError:
                pass
            self.blackhole_fillers.append(filler)
        return listener

    def shutdown(self):
        """Stops what `start` got to start (it may have failed half way)."""
        for step in (lambda: self.server.stop(), lambda: self.mock.stop(),
                     lambda: self.otlp and self.otlp.stop(),
                     lambda: subprocess.run([str(ROOT / "bench/apns/nginx-sink.sh"), "stop", str(self.sink_port)],
                                            env={**os.environ, "SINK_DIR": str(self.dir / "sink")},
                                            capture_output=True)):
            try:
                step()
            except Exception as error:  # noqa: BLE001 - a benchmark's teardown reports and goes on
                print(f"teardown: {error}", file=sys.stderr)

    async def sleep_until(self, when):
        try:
            await asyncio.wait_for(self.stop.wait(), max(0.0, when - time.time()))
        except asyncio.TimeoutError:
            pass

    # MARK: noise

    async def a_publish(self, interests, extra=None):
        http = HTTP(self.port, "127.0.0.1")
        body = {"interests": interests, "apns": {"aps": {"alert": "campaign"}},
                "web": {"notification": {"title": "campaign"}}, **(extra or {})}
        status, payload, _ = await http.request("POST", f"/publish_api/v1/instances/{A_ID}/publishes/interests",
                                                body, {"Authorization": f"Bearer {A_SECRET}"})
        http.close()
        self.tally.status("A publish", status)
        if status == 200:
            self.a_publishes.append(json.loads(payload)["publishId"])

    async def cancel_a(self):
        http = HTTP(self.port, "127.0.0.1")
        for publish in self.a_publishes:
            try:
                await http.request("DELETE", f"/publish_api/v1/instances/{A_ID}/publishes/{publish}", None,
                                   {"Authorization": f"Bearer {A_SECRET}"})
            except (ConnectionError, OSError):
                http.close()
        http.close()
        self.a_publishes.clear()

    async def noise_connections(self):
        held = []

        async def hold(source):
            http = HTTP(self.port, source)
            while not self.stop.is_set():
                try:
                    status, _, _ = await http.request("GET", "/health")
                    self.tally.status("attacker health", status)
                    self.tally.noise_at.append(time.time())
                except (ConnectionError, OSError) as error:
                    self.tally.status("attacker health", type(error).__name__)
                await self.sleep_until(time.time() + 30)
            http.close()

        for address in range(40):
            for _ in range(128):
                held.append(asyncio.get_running_loop().create_task(hold(f"127.0.1.{address + 1}")))
            await asyncio.sleep(0.05)
        await self.stop.wait()
        await asyncio.gather(*held, return_exceptions=True)

    async def noise_interests(self):
        async def worker(source):
            http = HTTP(self.port, source)
            while not self.stop.is_set():
                try:
                    status, payload, retry = await http.request(
                        "POST", f"/device_api/v1/instances/{A_ID}/devices/apns",
                        {"token": secrets.token_hex(32), "bundleIdentifier": "com.example.app"})
                    self.tally.status("attacker register", status)
                    if status == 200:
                        device = json.loads(payload)["id"]
                        names = [f"{secrets.token_hex(4)}-{i:05d}-" + "x" * 149 for i in range(5000)]
                        status, _, retry = await http.request(
                            "PUT", f"/device_api/v1/instances/{A_ID}/devices/apns/{device}/interests",
                            {"interests": names})
                        self.tally.status("attacker interests", status)
                    if status == 429:
                        await self.sleep_until(time.time() + (retry or 1))
                except (ConnectionError, OSError) as error:
                    self.tally.status("attacker interests", type(error).__name__)
                    await self.sleep_until(time.time() + 0.5)

        await asyncio.gather(*(worker(f"127.0.2.{i + 1}") for i in range(8)))

    async def noise_blackhole(self):
        http = HTTP(self.port, "127.0.3.1")
        registered = 0
        for _ in range(600):
            if self.stop.is_set():
                break
            point = ec_point()
            sub = {"endpoint": f"https://{BLACKHOLE_HOST}:{self.blackhole_port}/push/{uuid.uuid4().hex}",
                   "expirationTime": None, "keys": {"p256dh": point, "auth": b64url(os.urandom(16))}}
            token = __import__("base64").b64encode(json.dumps(sub).encode()).decode()
            try:
                status, payload, retry = await http.request(
                    "POST", f"/device_api/v1/instances/{A_ID}/devices/web", {"token": token, "metadata": {}})
                self.tally.status("attacker web register", status)
                if status == 200:
                    device = json.loads(payload)["id"]
                    status, _, retry = await http.request(
                        "POST", f"/device_api/v1/instances/{A_ID}/devices/web/{device}/interests/campaign")
                    registered += 1
                if status == 429:
                    await self.sleep_until(time.time() + (retry or 1))
            except (ConnectionError, OSError) as error:
                self.tally.status("attacker web register", type(error).__name__)
        while not self.stop.is_set():
            await self.a_publish(["campaign"])
            await self.sleep_until(time.time() + 5)

    async def noise_campaigns(self):
        for _ in range(8):
            await self.a_publish(["paced"], {"x_delivery": {"throttlePerMinute": 60}})
        await self.stop.wait()

    async def noise_fanout(self):
        await self.a_publish(["fanout"])
        await self.stop.wait()

    async def noise_webhooks(self):
        hanging = await asyncio.start_server(lambda r, w: self.hang(r, w), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{hanging.sockets[0].getsockname()[1]}/hook"
        while not self.stop.is_set():
            await self.a_publish(["paced"], {"webhookUrl": url})
            await self.sleep_until(time.time() + 1)
        hanging.close()

    async def hang(self, reader, writer):
        await self.stop.wait()
        writer.close()

    async def noise_slow_apns(self):
        while not self.stop.is_set():
            await self.a_publish(["paced"])
            await self.sleep_until(time.time() + 10)

    # MARK: phases

    async def phase(self, name):
        self.stop = asyncio.Event()
        self.tally = Tally()
        noises = {"connections": [self.noise_connections], "interests": [self.noise_interests],
                  "blackhole": [self.noise_blackhole], "campaigns": [self.noise_campaigns],
                  "fanout": [self.noise_fanout], "webhooks": [self.noise_webhooks],
                  "slow-apns": [self.noise_slow_apns]}
        chosen = ([n for k in PHASES[1:-1] for n in noises[k]] if name == "all" else noises.get(name, []))
        cpu0, db0, t0 = cpu_seconds(self.pid), db_bytes(self.dir), time.monotonic()
        wall0 = time.time()
        await self.tell_neighbour("start")
        tasks = [asyncio.get_running_loop().create_task(f()) for f in chosen]
        seconds = self.args.phase_seconds * (2 if name == "all" else 1)
        await asyncio.sleep(seconds)
        self.stop.set()
        cpu1, db1, t1 = cpu_seconds(self.pid), db_bytes(self.dir), time.monotonic()
        await self.tell_neighbour("stop")
        if tasks:
            await asyncio.wait(tasks, timeout=40)
        b = json.loads(await self.neighbour.stdout.readline())
        for key, count in b["statuses"].items():
            self.tally.statuses[key] = self.tally.statuses.get(key, 0) + count
        await self.cancel_a()
        hops = self.hops(b["samples"]) if self.otlp else None
        if self.args.dump:
            # Raw samples, seconds from the phase's start: B's publishes (start, publish → delivery), its
            # registrations (start, latency) and when the attacker's requests were answered.
            Path(self.args.dump).mkdir(parents=True, exist_ok=True)
            (Path(self.args.dump) / f"{name}.json").write_text(json.dumps({
                "delivery": [[started - wall0, arrived - started] for started, arrived, _ in b["samples"]],
                "register": [[at - wall0, latency] for at, latency in zip(b["register_at"], b["register"])],
                "noise": [at - wall0 for at in self.tally.noise_at]}))
        return {"name": name, "hops": hops, "seconds": t1 - t0, "cpu": (cpu1 - cpu0) / (t1 - t0), "db": db1 - db0,
                "delivery": b["delivery"], "register": b["register"], "lost": b["lost"],
                "statuses": dict(sorted(self.tally.statuses.items())), "load": os.getloadavg()[0]}

    def hops(self, samples):
        """Per hop of B's publishes, from the spans of their traces (`--trace`), in ms: the client's start to the
        server span's start (the event loop and the request's wait for a task), the commit, the commit's end to
        the span's end (the answer), the span's end to the run's start (the claim), the run's start to the
        notification's arrival at the mock (targets read, the sender's queue and connection thread), and that to the
        first result (the send batch's span starts at its first result: the mock's answer and the curl thread)."""
        time.sleep(1.5)  # the last export (scheduleDelayMillis 500) in
        by_trace = {}
        for span in self.otlp.spans():
            by_trace.setdefault(span["traceId"], []).append(span)
        publish_trace = {}
        for trace, spans in by_trace.items():
            for span in spans:
                if span["kind"] == 2 and span["attrs"].get("beams.publish_id"):
                    publish_trace[span["attrs"]["beams.publish_id"]] = trace
        rows = []
        for started, arrived, publish in samples:
            spans = by_trace.get(publish_trace.get(publish), [])
            named = {}
            for span in spans:
                named.setdefault(span["name"], []).append(span)
            server = [sp for sp in spans if sp["kind"] == 2]
            commit, run, send = named.get("publish commit"), named.get("process publish"), named.get("send apns")
            if not (server and commit and run and send):
                continue
            t = lambda sp, key: int(sp[key]) / 1e9  # noqa: E731
            first_result = min(t(sp, "startTimeUnixNano") for sp in send)
            rows.append({"total": arrived - started,
                         "to server": t(server[0], "startTimeUnixNano") - started,
                         "before commit": t(commit[0], "startTimeUnixNano") - t(server[0], "startTimeUnixNano"),
                         "commit": t(commit[0], "endTimeUnixNano") - t(commit[0], "startTimeUnixNano"),
                         "answer": t(server[0], "endTimeUnixNano") - t(commit[0], "endTimeUnixNano"),
                         "claim": t(run[0], "startTimeUnixNano") - t(server[0], "endTimeUnixNano"),
                         "run to mock": arrived - t(run[0], "startTimeUnixNano"),
                         "mock to result": first_result - arrived})
        return rows

    async def tell_neighbour(self, line):
        self.neighbour.stdin.write(line.encode() + b"\n")
        await self.neighbour.stdin.drain()

    async def run(self):
        self.neighbour = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--neighbour", str(self.port), self.mock.control,
            "--publish-every", str(self.args.publish_every), "--register-every", str(self.args.register_every),
            # A phase's samples come back as one JSON line; with `--trace` and 40 s of `all` it passed asyncio's
            # default 64 KiB line limit.
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=16 << 20)
        assert (await self.neighbour.stdout.readline()).strip() == b"ready"
        # The noise's own CPU (5,120 connections opened, 820 KB bodies built, in this process) is the attacker's,
        # which on the internet is not on the server's cores: below the server, B and the mocks, which were all
        # started before this (a nice value is inherited at fork, so they keep theirs).
        if self.args.noise_nice:
            os.nice(self.args.noise_nice)
        phases = self.args.only.split(",") if self.args.only else PHASES
        results = []
        quiet = None
        try:
            for name in phases:
                result = await self.phase(name)
                results.append(result)
                if name == "quiet":
                    quiet = result
                report(result, quiet)
        finally:
            self.neighbour.stdin.close()
            try:
                await asyncio.wait_for(self.neighbour.wait(), 10)
            except asyncio.TimeoutError:
                self.neighbour.kill()
        return results


def report(r, quiet):
    d, g = r["delivery"], r["register"]
    line = (f"{r['name']:12s} B publish->APNs p50 {pct(d, .5) * 1e3:7.1f} ms  p99 {pct(d, .99) * 1e3:7.1f} ms  "
            f"max {max(d, default=float('nan')) * 1e3:7.1f} ms  n={len(d)} lost={r['lost']}  | "
            f"B register p50 {pct(g, .5) * 1e3:6.1f} ms p99 {pct(g, .99) * 1e3:6.1f} ms n={len(g)}")
    if quiet and quiet is not r and quiet["delivery"] and d:
        line += (f"  | ×quiet: delivery p99 {pct(d, .99) / pct(quiet['delivery'], .99):.2f}, "
                 f"register p99 {pct(g, .99) / pct(quiet['register'], .99):.2f}")
    print(line, flush=True)
    growth = r["db"] / 2**20
    print(f"{'':12s} server CPU {r['cpu'] * 100:5.1f}% of a core, database {growth:+.1f} MiB "
          f"({growth * 3600 / r['seconds']:+.0f} MiB/hour at this rate), load {r['load']:.1f}", flush=True)
    print(f"{'':12s} statuses {r['statuses']}", flush=True)
    if r.get("hops"):
        rows = r["hops"]
        slow = sorted(rows, key=lambda row: row["total"])[-max(1, len(rows) // 50):]
        parts = []
        for key in rows[0]:
            values = [row[key] for row in rows]
            parts.append(f"{key} {pct(values, .5) * 1e3:.1f}/{pct(values, .99) * 1e3:.1f}"
                         f"/{sum(row[key] for row in slow) / len(slow) * 1e3:.1f}")
        print(f"{'':12s} hops ms p50/p99/mean of the slowest 2% (n={len(rows)}): " + ", ".join(parts), flush=True)


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def db_bytes(directory):
    """Bytes the database's pages in use take (page count less free pages, as of the newest commit, WAL included):
    what the data costs on disk, without the WAL's size, which rises and falls with the checkpoints."""
    connection = sqlite3.connect(f"file:{directory / 'push.sqlite'}?mode=ro", uri=True)
    try:
        pages, free, size = (connection.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_count", "freelist_count", "page_size"))
    finally:
        connection.close()
    return (pages - free) * size


def b64url(data):
    return __import__("base64").urlsafe_b64encode(data).rstrip(b"=").decode()


def ec_point():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    return b64url(key.public_key().public_bytes(serialization.Encoding.X962,
                                                serialization.PublicFormat.UncompressedPoint))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phase-seconds", type=float, default=30)
    ap.add_argument("--fanout", type=int, default=100_000, help="devices following A's fan-out interest")
    ap.add_argument("--only", help=f"comma-separated phases, from {','.join(PHASES)}")
    ap.add_argument("--publish-every", type=float, default=0.1,
                    help="seconds between B's publishes (default 0.1: 200 in a 20 s phase)")
    ap.add_argument("--register-every", type=float, default=0.05,
                    help="seconds between B's registrations (default 0.05: 400 in a 20 s phase)")
    ap.add_argument("--noise-nice", type=int, default=10,
                    help="nice value added to the noise's own process once the server, mocks and B run (0: none)")
    ap.add_argument("--trace", action="store_true",
                    help="trace every publish to an OTLP stand-in and print where B's publishes spent their time")
    ap.add_argument("--dump", metavar="DIR", help="write each phase's raw samples to DIR/PHASE.json")
    ap.add_argument("--neighbour", nargs=2, metavar=("PORT", "MOCK_CONTROL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.neighbour:
        neighbour = Neighbour(int(args.neighbour[0]), args.neighbour[1], args.publish_every, args.register_every)
        asyncio.run(neighbour.main())
        return
    random.seed(1)
    with tempfile.TemporaryDirectory(prefix="noisy-") as tmp:
        bench = Bench(args, Path(tmp))
        try:
            bench.start()
        except BaseException:
            bench.shutdown()
            raise
        print(f"== noisy neighbour: phases of {args.phase_seconds:.0f} s ('all' twice as long), A's fan-out "
              f"{args.fanout:,} devices, A's APNs answers after 2 s; B publishes every {args.publish_every} s and "
              f"registers every {args.register_every} s from a process of its own; the noise at nice "
              f"+{args.noise_nice}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
        try:
            asyncio.run(bench.run())
        finally:
            bench.shutdown()


if __name__ == "__main__":
    main()
