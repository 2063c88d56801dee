#!/usr/bin/env python3
"""Memory under held uploads (docs/SECURITY.md "Connections and request bodies"): the server's resident set size
(VmRSS) when N clients each send a request head and all but the last byte of a large body, then hold the
connection.

Two attacks, each against a fresh `push-server serve` (PUSH_SERVER_BIN, default .build/release/push-server) with the
default limits, plain HTTP on 127.0.0.1, a mock APNs (Tests/Support) because the config needs an instance:
- `health`: N × 1 MiB bodies to GET /health, all from 127.0.0.1;
- `interests`: N × 900 KiB bodies to PUT …/interests (the largest body a device route takes), each from its own
  address (127.0.1.1, 127.0.1.2, …), so neither the per-address connection cap nor the per-address body share
  applies: only the server-wide body budget does.
Prints RSS before the attack and once it has settled (the largest of 10 samples, 0.2 s apart, after the last
upload was sent), and how many uploads were answered at once (refused) rather than held.

Usage: bench/http/held_uploads.py [N]   (default 150; env PUSH_SERVER_BIN)
"""
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))
sys.path.insert(0, str(ROOT / "Tests" / "Support"))

from harness import INSTANCE_ID, Mock, Server, write_apns_key  # noqa: E402


def rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hold(port, source, head, size):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock.sendall(head)
    sock.setblocking(False)
    sent, chunk = 0, b"x" * 65536
    deadline = time.monotonic() + 5
    # All but the last byte; a server that answered and closed stops taking bytes (or resets), which ends it.
    while sent < size - 1 and time.monotonic() < deadline:
        try:
            sent += sock.send(chunk[:size - 1 - sent])
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            break
    return sock


def answered(sock):
    """An answer or a close arrived (the upload was refused); a held upload has nothing to read."""
    try:
        sock.recv(1, socket.MSG_PEEK)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def attack(server, name, n):
    pid = server.proc.pid
    before = rss_mib(pid)
    socks = []
    for i in range(n):
        if name == "health":
            size, source = 1 << 20, "127.0.0.1"
            head = f"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n"
        else:
            size, source = 900 * 1024, f"127.0.1.{i % 250 + 1}"
            path = f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/held-{i}/interests"
            head = (f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {size}\r\n\r\n")
        socks.append(hold(server.port, source, head.encode(), size))
    time.sleep(0.5)
    peak = max(rss_mib(pid) for _ in range(10) if time.sleep(0.2) is None)
    refused = sum(answered(s) for s in socks)
    for s in socks:
        s.close()
    print(f"{name:10} N={n}  RSS before {before:6.1f} MiB  held {peak:6.1f} MiB  answered at once {refused}/{n}")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        p8, pub = write_apns_key(directory)
        mock = Mock(directory, pub)
        try:
            for name in ["health", "interests"]:
                server_dir = directory / name
                server_dir.mkdir()
                # The product's defaults: no rate-limit override (the harness lifts the per-address rate limit).
                server = Server(server_dir, mock, p8, overrides={"limits": {}})
                try:
                    attack(server, name, n)
                finally:
                    server.stop()
        finally:
            mock.stop()


if __name__ == "__main__":
    main()
