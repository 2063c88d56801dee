"""A free loopback TCP port for a process the tests start and point others at.

The kernel's pick for port 0 comes from the ephemeral range (`ip_local_port_range`), the same range every outgoing
connection's source port comes from; under parallel test workers a port picked that way and handed to a server a
moment later can already be the source port of some client's connection, and the server's bind fails with
EADDRINUSE. The ports handed out here are below that range, where no outgoing connection lands, chosen at random and
bound once to check that nothing listens on them. Callers that start a server should still retry with another port
on EADDRINUSE: two workers can draw the same port.
"""
import random
import socket


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
