#!/usr/bin/env python3
"""The CPU a push-server spends on `PUT …/interests` bodies of 229,000 copies of one name (916 KB), sent back to
back over one keep-alive connection from one address, under the default limits (issue 25).

  bench/abuse/interest_flood.py BINARY [SECONDS]

It starts BINARY on a temporary SQLite store, registers one device, sends the body for SECONDS (10) and prints the
answers, the server's CPU time (utime + stime from /proc) per request and as a share of one core."""
import http.client, json, os, sys, time

import abuse_server
binary = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
inst = abuse_server.INSTANCE
p, port, d = abuse_server.start(binary)
c = http.client.HTTPConnection("127.0.0.1", port)
h = {"Content-Type": "application/json"}
c.request("POST", f"/device_api/v1/instances/{inst}/devices/apns", json.dumps({"token": "ab" * 32, "bundleIdentifier": "b"}), h)
dev = json.loads(c.getresponse().read())["id"]
body = json.dumps({"interests": ["a"] * 229_000}, separators=(",", ":"))
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
start, t0 = cpu(), time.monotonic()
codes = {}
while time.monotonic() - t0 < seconds:
    c.request("PUT", f"/device_api/v1/instances/{inst}/devices/apns/{dev}/interests", body, h)
    r = c.getresponse(); r.read(); codes[r.status] = codes.get(r.status, 0) + 1
elapsed, used = time.monotonic() - t0, cpu() - start
n = sum(codes.values())
print(f"{binary}: {n} requests in {elapsed:.1f} s ({n/elapsed:.0f}/s) {codes}; server CPU {used:.2f} s = "
      f"{100*used/elapsed:.0f} % of a core, {1000*used/n:.1f} ms per request; body {len(body)} bytes")
p.terminate(); p.wait()
