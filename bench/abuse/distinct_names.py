#!/usr/bin/env python3
"""What the noisy bench's interest attacker costs the server per request: `PUT …/interests` with 5,000 distinct
164-byte names, each to a new device, under the default limits (issue 25).

  bench/abuse/distinct_names.py BINARY [PUTS] [--concurrency 1]

It starts BINARY on a temporary SQLite store, registers PUTS devices from one address, then sends one 5,000-name
`PUT` per device, each from an address of its own (127.0.1.x, so each fits a full per-address bucket and no 429
is waited for), and prints the server's CPU time (utime + stime from /proc) per `PUT`, the wall time of each `PUT`
(p50, max), the bytes written to the disk (`/proc/PID/io` write_bytes: WAL, checkpoints, database) per `PUT` and the
database file's growth and the WAL file's size. CPU time and bytes written are far less sensitive to other load on the machine than latency."""
import argparse, http.client, json, os, secrets, time

import abuse_server

ap = argparse.ArgumentParser()
ap.add_argument("binary")
ap.add_argument("puts", type=int, nargs="?", default=40)
ap.add_argument("--names", type=int, default=5000)
args = ap.parse_args()
inst = abuse_server.INSTANCE
p, port, d = abuse_server.start(args.binary, health_source="127.0.0.2")
h = {"Content-Type": "application/json"}


def conn(source):
    c = http.client.HTTPConnection("127.0.0.1", port, source_address=(source, 0))
    return c


c = conn("127.0.0.2")
devices = []
for _ in range(args.puts):
    c.request("POST", f"/device_api/v1/instances/{inst}/devices/apns",
              json.dumps({"token": secrets.token_hex(32), "bundleIdentifier": "b"}), h)
    devices.append(json.loads(c.getresponse().read())["id"])
bodies = [json.dumps({"interests": [f"{secrets.token_hex(4)}-{i:05d}-" + "x" * 149 for i in range(args.names)]})
          for _ in devices]


def cpu(part=None):
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    user, system = int(f[11]), int(f[12])
    return {"user": user, "system": system}.get(part, user + system) / os.sysconf("SC_CLK_TCK")


def written():
    for line in open(f"/proc/{p.pid}/io"):
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def db_bytes():
    return os.path.getsize(os.path.join(d, "push.sqlite"))


def wal_bytes():
    path = os.path.join(d, "push.sqlite-wal")
    return os.path.getsize(path) if os.path.exists(path) else 0


time.sleep(1)
start, s0, w0, b0, t0 = cpu(), cpu("system"), written(), db_bytes(), time.monotonic()
walls, codes = [], {}
for k, (device, body) in enumerate(zip(devices, bodies)):
    c = conn(f"127.0.1.{k % 250 + 1}" if k < 250 else f"127.0.2.{k % 250 + 1}")
    t = time.monotonic()
    c.request("PUT", f"/device_api/v1/instances/{inst}/devices/apns/{device}/interests", body, h)
    r = c.getresponse(); r.read(); codes[r.status] = codes.get(r.status, 0) + 1
    walls.append(time.monotonic() - t)
    c.close()
elapsed = time.monotonic() - t0
time.sleep(2)  # let the checkpoint thread copy what the PUTs left in the WAL
used, system, wrote = cpu() - start, cpu("system") - s0, written() - w0
walls.sort()
n = len(walls)
print(f"{os.path.basename(os.path.dirname(os.path.dirname(args.binary)))}/{os.path.basename(args.binary)}: "
      f"{n} PUTs of {args.names} names {codes} in {elapsed:.1f} s; server CPU {1000 * used / n:.1f} ms per PUT "
      f"({1000 * system / n:.1f} ms of it in the kernel); "
      f"wall p50 {1000 * walls[n // 2]:.0f} ms, max {1000 * walls[-1]:.0f} ms; "
      f"disk writes {wrote / n / 2**20:.1f} MiB per PUT; database file +{(db_bytes() - b0) / 2**20:.1f} MiB, "
      f"WAL file {wal_bytes() / 2**20:.1f} MiB")
p.terminate(); p.wait()
