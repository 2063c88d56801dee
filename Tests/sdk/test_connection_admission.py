"""Connections and request bodies under abuse, end to end over real sockets (docs/SECURITY.md "Connections and
request bodies"): one address holding its connection cap does not keep another address out, an idle connection
makes room at the global cap and idle ones time out sooner near it, bodies on routes
without one are refused from the request head (never buffered), and held uploads past the server's body budget get
503 with Retry-After before their body is read.

A second client address is 127.0.0.2 (all of 127.0.0.0/8 is loopback), so "another client" is a real socket from
another address."""
import json
import socket
import time

import pytest

from beams_client import HTTP
from conftest import INSTANCE_ID, SECRET, Mock, Server, write_apns_key

OTHER = "127.0.0.2"
# Connections opened past a cap: the server closes these.
SPARE = 8
PUBLISH = f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """Starts plain-HTTP servers with the given limits; stops them (and the mock) at the end of the module."""
    directory = tmp_path_factory.mktemp("e2e-connections")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    started = []

    def start(name, **limits):
        server_directory = directory / name
        server_directory.mkdir()
        server = Server(server_directory, mock, p8, limits={"requestsPerSecondPerInstance": 1_000_000, **limits})
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
    mock.stop()


def connect(server, source="127.0.0.1", timeout=5):
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout, source_address=(source, 0))


def read_response(sock):
    """Reads one response (head and Content-Length body); returns (status, headers, body), or None when the server
    closed (or reset) the connection before answering."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    except ConnectionResetError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


def health(sock):
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    return read_response(sock)


def served(server, source):
    """Whether a new connection from `source` gets an answer to GET /health (else it was accepted and closed)."""
    with connect(server, source) as sock:
        answer = health(sock)
        return answer is not None and answer[0] == 200


def closed_by_server(sock, wait):
    """Whether the server closed `sock` (EOF or reset within `wait` seconds; a live idle connection stays silent).
    The socket's own timeout comes back afterwards: a later request on it must not inherit a 5 ms one (a loaded CI
    machine answered `health` on a held connection after more than that)."""
    before = sock.gettimeout()
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    finally:
        sock.settimeout(before)


def alive(socks):
    """How many of `socks` the server has not closed."""
    return sum(not closed_by_server(sock, 0.005) for sock in socks)


def eventually(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


# MARK: Connections per address


def test_one_address_holding_its_connection_cap_does_not_keep_another_address_out(plain):
    server = plain("per-address")  # the default cap: 128 connections per address
    held = []
    try:
        # Keep-alive connections that answered (accepted for sure), and silent ones still waiting for their head:
        # both count. More than the cap: the server closes the ones past it.
        for _ in range(64):
            sock = connect(server)
            assert health(sock)[0] == 200
            held.append(sock)
        held += [connect(server) for _ in range(64 + SPARE)]
        # Wait for the server to have accepted them all (before any probe, which could take a place first).
        assert eventually(lambda: alive(held) <= 128), "one address holds more than 128 connections"
        assert not served(server, "127.0.0.1"), "a connection past the cap was served"
        # Another address, and a publishing backend there, are served meanwhile.
        assert served(server, OTHER)
        backend = HTTP(server, source=OTHER)
        r = backend.request("POST", PUBLISH, {"interests": ["x"], "apns": {"aps": {"alert": "a"}}}, AUTH)
        assert r.status == 200, r
        # The held connections still work.
        assert health(held[0])[0] == 200
        # A closed connection frees its place.
        held.pop(0).close()
        assert eventually(lambda: served(server, "127.0.0.1"))
    finally:
        for sock in held:
            sock.close()


def test_a_trusted_proxy_is_not_held_to_the_per_address_cap(plain):
    server = plain("proxy-exempt", trustedProxies=["127.0.0.1"])
    held = [connect(server) for _ in range(140)]
    try:
        for sock in held:
            assert health(sock)[0] == 200
        others = [connect(server, OTHER) for _ in range(128 + SPARE)]
        held += others
        assert eventually(lambda: alive(others) <= 128)
        assert not served(server, OTHER)
    finally:
        for sock in held:
            sock.close()


def test_at_the_connection_cap_an_idle_connection_makes_room_for_a_new_client(plain):
    server = plain("evict", maxConnections=16, maxConnectionsPerAddress=0)
    idle = []
    try:
        # Sixteen idle keep-alive connections: the kernel spreads them over both event loops.
        for _ in range(16):
            sock = connect(server)
            assert health(sock)[0] == 200
            idle.append(sock)
        # A new client is served: an idle keep-alive connection was closed for it, not the newcomer. (Eviction is
        # per event loop: the newcomer's loop closes its own oldest idle connection.)
        with connect(server, OTHER) as sock:
            answer = health(sock)
            assert answer is not None and answer[0] == 200, "the new client was refused at the cap"
        assert alive(idle) == 15
    finally:
        for sock in idle:
            sock.close()


def test_near_the_connection_cap_idle_connections_get_the_short_idle_timeout(plain):
    server = plain("pressure", maxConnections=8, maxConnectionsPerAddress=0, idleTimeoutUnderPressureSeconds=1)
    idle = []
    try:
        # Six of eight open (three quarters): idle keep-alive connections close after 1 s, not 60 s, until fewer
        # than three quarters are open.
        for _ in range(6):
            sock = connect(server)
            assert health(sock)[0] == 200
            idle.append(sock)
        assert eventually(lambda: alive(idle) < 6, seconds=5)
        left = [sock for sock in idle if not closed_by_server(sock, 0.005)]
        assert len(left) < 6
        # Below three quarters the normal idle timeout applies again.
        calm = [connect(server) for _ in range(5 - len(left))]
        idle += calm
        for sock in calm:
            assert health(sock)[0] == 200
        time.sleep(1.5)
        assert alive(left + calm) == 5
    finally:
        for sock in idle:
            sock.close()


# MARK: Bodies refused from the request head


@pytest.mark.parametrize("path", ["/health", "/ready", "/metrics"])
def test_a_1_mib_body_on_a_route_without_one_is_refused_before_it_is_sent(plain, path):
    server = plain(f"nobody-{path.strip('/')}")
    with connect(server) as sock:
        # Only the head: the answer must not wait for (or read) the declared megabyte.
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n".encode())
        answer = read_response(sock)
    assert answer is not None and answer[0] == 413, answer
    assert json.loads(answer[2])["description"] == "Request body is too large"


def hold_upload(server, source, size):
    """Sends the head of a `PUT …/interests` (the largest body a device route takes, 900 KiB) declaring `size` body
    bytes, and one byte of it, then holds the connection. The device need not exist: the body comes first."""
    sock = connect(server, source)
    path = f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/held-upload/interests"
    sock.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {size}\r\n\r\n{{".encode())
    return sock


def answered_at_once(sock, timeout=3):
    sock.settimeout(timeout)
    try:
        return read_response(sock)
    except socket.timeout:
        return None


def test_held_uploads_past_the_body_budget_get_503_before_their_body_is_read(plain):
    # The defaults: 64 MiB of bodies in flight, one address an eighth of it (8 MiB).
    server = plain("body-budget")
    size = 900_000
    held = []
    try:
        # One address's share holds 9 such uploads: the 10th is refused from its head, with Retry-After.
        held += [hold_upload(server, "127.0.0.10", size) for _ in range(9)]
        time.sleep(0.3)
        refused = hold_upload(server, "127.0.0.10", size)
        held.append(refused)
        answer = answered_at_once(refused)
        assert answer is not None and answer[0] == 503, answer
        assert answer[1]["retry-after"] == "1"
        assert json.loads(answer[2])["error"] == "Service unavailable"
        # Other addresses fill the server-wide budget (74 × 900,000 bytes ≤ 64 MiB) ...
        for n in range(11, 18):
            held += [hold_upload(server, f"127.0.0.{n}", size) for _ in range(9)]
        held += [hold_upload(server, "127.0.0.18", size) for _ in range(2)]
        time.sleep(0.5)
        # ... and the next upload, from a fresh address, gets 503 at once.
        late = hold_upload(server, "127.0.0.19", size)
        held.append(late)
        answer = answered_at_once(late)
        assert answer is not None and answer[0] == 503, answer
        # A request without a body is not affected.
        assert served(server, "127.0.0.19")
        # A closed upload gives its bytes back: the next one is held (read), not refused.
        held[0].close()
        time.sleep(0.3)
        again = hold_upload(server, "127.0.0.20", size)
        held.append(again)
        assert answered_at_once(again, timeout=1) is None
        # A publishing backend's small body still fits.
        backend = HTTP(server, source="127.0.0.21")
        r = backend.request("POST", PUBLISH, {"interests": ["x"], "apns": {"aps": {"alert": "a"}}}, AUTH)
        assert r.status == 200, r
    finally:
        for sock in held:
            sock.close()
