"""A free loopback TCP port for a process the tests start and point others at.

The kernel's pick for port 0 comes from the ephemeral range (`ip_local_port_range`), the same range every outgoing
connection's source port comes from; under parallel test workers a port picked that way and handed to a server a
moment later can already be the source port of some client's connection, and the server's bind fails with
EADDRINUSE. The ports handed out here are below that range, where no outgoing connection lands, chosen at random and
bound once to check that nothing listens on them. Callers that start a server should still retry with another port
on EADDRINUSE, two workers can draw the same port: `start_on_free_ports` does that for every process the tests start
on a port of their choosing (push-server, the mocks, PostgreSQL).
"""
import os
import random
import socket
import subprocess


def _ephemeral_low(default=32768):
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def free_port(host="127.0.0.1"):
    """A port below the ephemeral range that `host` can bind now (the ephemeral range's own pick if none is)."""
    high = _ephemeral_low() - 1
    low = max(1024, high - 12000)
    for _ in range(64):
        port = random.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


ADDRESS_IN_USE = "Address already in use"


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _written_since(path, offset):
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def start_on_free_ports(start, log_path, ports, attempts=5):
    """Runs `start(*ports)`, which starts a process listening on `ports` and returns once it serves (raising
    RuntimeError or CalledProcessError when the process gave up). When what the process wrote to `log_path` during
    that attempt says a port was taken (`Address already in use`: another worker drew the same one), draws fresh
    ports with `free_port` and runs `start` again, up to `attempts` times; any other failure is raised at once.
    Returns: (what `start` returned, the ports it finally used)."""
    ports = list(ports)
    for attempt in range(attempts):
        logged = _size(log_path)
        try:
            return start(*ports), ports
        except (RuntimeError, subprocess.CalledProcessError):
            if attempt == attempts - 1 or ADDRESS_IN_USE not in _written_since(log_path, logged):
                raise
        ports = [free_port() for _ in ports]
