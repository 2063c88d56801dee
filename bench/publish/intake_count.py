#!/usr/bin/env python3
"""Publish intake counted, not timed: instructions per publish accepted and finished, under callgrind.

Instructions are not disturbed by the machine's load, so two builds compare on a crowded machine where the clock
cannot (docs/BENCHMARKS.md "Publish intake").

    bench/publish/intake_count.py BINARY [BINARY ...] [--publishes 1000] [--warmup 200] [--connections 16]

Method: each BINARY serves the example config as `bench/publish/intake.sh` runs it (its per-instance rate limit
lifted; no APNs credentials and no subscribers, so the engine finishes each job at once after its full store work:
enqueue, claim, target page, finish), under `valgrind --tool=callgrind` (started without instrumentation; it is
switched on after the warm-up). `--warmup` publishes are sent and drained, the counters are zeroed
(`callgrind_control -z`), `--publishes` more are sent over `--connections` keep-alive connections, the counts are
dumped once every one is accepted and again once the engine has finished every job (`/ready`'s `queueDepth` 0).
Prints the whole process's instructions while accepting, while draining, and per publish; with two or more
binaries, each one's ratio to the first. The process idles at well under 1 M instructions a second (timers), a
few percent of a run's.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTANCE = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
SECRET = "example-secret-change-me-0123456789abcdef"
BODY = b'{"interests":["intake-bench"],"apns":{"aps":{"alert":{"title":"Hello","body":"Intake benchmark"}}}}'


def config(directory: Path, port: int) -> Path:
    text = (ROOT / "config.example.json").read_text()
    text = text.replace('"port": 8080', f'"port": {port}').replace("./data/push.sqlite", str(directory / "push.sqlite"))
    text = text.replace('"level": "info"', '"level": "warning"')
    text = text.replace('"requestsPerSecondPerInstance": 100', '"requestsPerSecondPerInstance": 1000000')
    path = directory / "config.json"
    path.write_text(text)
    return path


def send(port: int, count: int):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    path = f"/publish_api/v1/instances/{INSTANCE}/publishes/interests"
    headers = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}
    for _ in range(count):
        connection.request("POST", path, body=BODY, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"publish answered {response.status}")
    connection.close()


def send_all(port: int, total: int, connections: int):
    shares = [total // connections + (1 if i < total % connections else 0) for i in range(connections)]
    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        for future in [pool.submit(send, port, n) for n in shares if n]:
            future.result()


def queue_depth(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/ready")
    body = connection.getresponse().read()
    connection.close()
    return json.loads(body)["checks"]["store"]["queueDepth"]


def drain(port: int, timeout: float = 600):
    deadline = time.monotonic() + timeout
    while queue_depth(port) != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the queue did not drain")
        time.sleep(0.2)


def total_instructions(dump: Path) -> int:
    for line in dump.read_text(errors="replace").splitlines():
        match = re.match(r"(?:summary|totals):\s+(\d+)", line)
        if match:
            return int(match.group(1))
    raise RuntimeError(f"no totals in {dump}")


def dumps(directory: Path):
    return sorted(directory.glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)


def measure(binary: str, args, port: int):
    directory = Path(tempfile.mkdtemp(prefix="intake-count-"))
    try:
        # bench/valgrind/sigsuspend_copy.c: without it valgrind 3.19 dies at start-up on some builds.
        preload = subprocess.run([str(ROOT / "bench/valgrind/preload.sh")], check=True, capture_output=True,
                                 text=True).stdout.strip()
        process = subprocess.Popen(
            ["env", f"LD_PRELOAD={preload}", "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={directory}/callgrind.out.%p",
             binary, "serve", "--config", str(config(directory, port))],
            stdout=subprocess.DEVNULL, stderr=open(directory / "server.log", "w"))
        deadline = time.monotonic() + 300
        while True:
            try:
                queue_depth(port)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{binary} did not start; see {directory}/server.log")
                time.sleep(0.5)
        subprocess.run(["callgrind_control", "-i", "on", str(process.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        send_all(port, args.warmup, args.connections)
        drain(port)
        subprocess.run(["callgrind_control", "-z", str(process.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        send_all(port, args.publishes, args.connections)
        accepted_after = time.monotonic() - started
        subprocess.run(["callgrind_control", "-d", "accepted", str(process.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        accepting = total_instructions(dumps(directory)[-1])
        drain(port)
        drained_after = time.monotonic() - started
        subprocess.run(["callgrind_control", "-d", "drained", str(process.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        draining = total_instructions(dumps(directory)[-1])
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        if args.keep:
            print(f"  dumps kept in {directory}")
        return accepting, draining, accepted_after, drained_after
    finally:
        if process.poll() is None:
            process.kill()
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--publishes", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--port", type=int, default=int(os.environ.get("HTTP_PORT", "28690")))
    parser.add_argument("--keep", action="store_true", help="keep the callgrind dumps (for callgrind_annotate)")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("needs valgrind (apt-get install valgrind)")
    print(f"== publish intake counted under callgrind: {args.warmup} publishes to warm up, then {args.publishes} over "
          f"{args.connections} connections; load {os.getloadavg()[0]:.1f}")
    first = None
    for binary in args.binaries:
        accepting, draining, accepted_s, drained_s = measure(binary, args, args.port)
        per = (accepting + draining) / args.publishes
        first = first or per
        print(f"{binary}: accepting {accepting / 1e6:.0f} M, draining {draining / 1e6:.0f} M instructions "
              f"({accepted_s:.0f} s, {drained_s:.0f} s); per publish accepted and finished {per / 1e6:.3f} M "
              f"({per / first:.2f}x the first); load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
