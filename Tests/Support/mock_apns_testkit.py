"""Helpers and fixtures for the mock's own tests: keys, JWT signing, a running mock process and a raw
h2-over-TLS client. Not named conftest.py: Tests/sdk has one, and both import helpers from `conftest`, which
clashes when pytest collects both directories in one run; the test module imports these fixtures instead."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from mock_process import HERE, MockProcess, _reset  # noqa: F401  (_reset: an autouse fixture, re-exported)

TEAM = "TEAM123456"
KID = "KEY1234567"
KID2 = "KEY7654321"
TOPIC = "com.example.app"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_jwt(key: ec.EllipticCurvePrivateKey, kid: str = KID, iss: str = TEAM, iat: Any = None,
             alg: str = "ES256") -> str:
    """An APNs provider token signed with `key` (ES256, raw r||s signature as JWS requires)."""
    header = b64url(json.dumps({"alg": alg, "kid": kid}).encode())
    claims = b64url(json.dumps({"iss": iss, "iat": int(time.time()) if iat is None else iat}).encode())
    der = key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


@dataclass
class Keys:
    key1: ec.EllipticCurvePrivateKey
    key2: ec.EllipticCurvePrivateKey
    stranger: ec.EllipticCurvePrivateKey  # not registered with the mock
    pub1: str
    pub2: str


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    d = tmp_path_factory.mktemp("keys")
    made = [ec.generate_private_key(ec.SECP256R1()) for _ in range(3)]
    paths = []
    for i, k in enumerate(made[:2]):
        p = d / f"pub{i}.pem"
        p.write_bytes(k.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
        paths.append(str(p))
    return Keys(made[0], made[1], made[2], paths[0], paths[1])


class Mock(MockProcess):
    """A running mock_apns.py process and its control API."""

    def __init__(self, args: list[str]) -> None:
        super().__init__("mock_apns.py", args)

    def behave(self, token: str, **behaviour: Any) -> None:
        self.control("PUT", f"/behaviours/{token}", behaviour)

    def requests(self, token: str | None = None) -> list[dict[str, Any]]:
        return self.control("GET", "/requests" + (f"?token={token}" if token else ""))


@pytest.fixture(scope="module")
def mock(keys: Keys):
    m = Mock(["--team-id", TEAM, "--key", f"{KID}={keys.pub1}", "--key", f"{KID2}={keys.pub2}",
              "--topic", TOPIC, "--topic", "com.example.other", "--max-streams", "50"])
    yield m
    m.stop()


@dataclass
class Response:
    stream_id: int
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    data_frames: int = 0
    reset: int | None = None  # RST_STREAM error code
    ended: bool = False

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def reason(self) -> str | None:
        return self.json.get("reason") if self.body else None


class _GoawayTolerant(h2.connection.H2Connection):
    """h2 closes its whole state machine on GOAWAY and then rejects the answers a server still sends for streams
    up to the GOAWAY's last-stream-id (which RFC 9113 §6.8 says it processes). Keep the connection open so tests
    see those answers, and a stream opened before the GOAWAY was read, as a real client's HTTP/2 stack does."""

    def _receive_goaway_frame(self, frame):  # type: ignore[no-untyped-def]
        frames, events = super()._receive_goaway_frame(frame)
        self.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
        return frames, events


class _Unlimited(_GoawayTolerant):
    """Lets a test open more streams than the server allows, to check the server refuses them."""

    @property
    def open_outbound_streams(self) -> int:  # type: ignore[override]
        super().open_outbound_streams
        return 0


class H2Client:
    """A blocking HTTP/2 client over TLS (ALPN h2) that keeps every event a test may want to inspect."""

    def __init__(self, mock: Mock, unlimited: bool = False, client_cert: tuple[str, str] | None = None) -> None:
        ctx = ssl.create_default_context(cafile=mock.ca_file)
        ctx.set_alpn_protocols(["h2"])
        if client_cert is not None:  # (certificate PEM, key PEM): certificate auth (`--client-ca`)
            ctx.load_cert_chain(*client_cert)
        raw = socket.create_connection(("127.0.0.1", mock.port), timeout=10)
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        assert self.sock.selected_alpn_protocol() == "h2"
        cls = _Unlimited if unlimited else _GoawayTolerant
        self.conn = cls(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.responses: dict[int, Response] = {}
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.closed = False
        self.max_streams_seen: list[int] = []
        # What arrived, in order: ("status", stream id) for a response's header block and ("max_streams", value)
        # for a SETTINGS change, so a test can see which came first.
        self.events: list[tuple[str, int]] = []
        self._flush()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:  # the server closed or reset the connection; reads report it
                self.closed = True

    def send(self, token: str, jwt: str | None = None, payload: Any = None, body: bytes | None = None,
             topic: str | None = TOPIC, push_type: str | None = "alert", priority: str | None = None,
             extra: list[tuple[str, str]] | None = None, method: str = "POST", path: str | None = None,
             end_stream: bool = True) -> int:
        """Starts one request and returns its stream id (does not wait)."""
        if body is None:
            body = json.dumps({"aps": {"alert": "hi"}} if payload is None else payload).encode()
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "https"), (":authority", "127.0.0.1"),
                   (":path", path if path is not None else f"/3/device/{token}")]
        if jwt is not None:
            headers.append(("authorization", f"bearer {jwt}"))
        if topic is not None:
            headers.append(("apns-topic", topic))
        if push_type is not None:
            headers.append(("apns-push-type", push_type))
        if priority is not None:
            headers.append(("apns-priority", priority))
        headers += extra or []
        self.responses[sid] = Response(sid)
        self.conn.send_headers(sid, headers, end_stream=not body and end_stream)
        if body:
            self.conn.send_data(sid, body, end_stream=end_stream)
        self._flush()
        return sid

    def finish_stream(self, sid: int, data: bytes = b"") -> None:
        if data:
            self.conn.send_data(sid, data, end_stream=True)
        else:
            self.conn.end_stream(sid)
        self._flush()

    def pump(self, timeout: float = 5.0) -> bool:
        """Reads once; returns False on EOF or timeout."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionResetError, ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                r = self.responses[event.stream_id]
                r.headers = dict(event.headers)
                r.status = int(r.headers[":status"])
                self.events.append(("status", event.stream_id))
                if event.stream_ended:
                    r.ended = True
            elif isinstance(event, h2.events.DataReceived):
                r = self.responses[event.stream_id]
                r.body += event.data
                r.data_frames += 1
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.responses[event.stream_id].ended = True
            elif isinstance(event, h2.events.StreamReset):
                self.responses[event.stream_id].reset = event.error_code
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if changed is not None:
                    self.max_streams_seen.append(changed.new_value)
                    self.events.append(("max_streams", changed.new_value))
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event
        self._flush()
        return True

    def wait(self, *sids: int, timeout: float = 5.0) -> list[Response]:
        deadline = time.monotonic() + timeout
        while not all(self.responses[s].ended or self.responses[s].reset is not None for s in sids):
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(left):
                break
        return [self.responses[s] for s in sids]

    def request(self, token: str, jwt: str | None, **kw: Any) -> Response:
        return self.wait(self.send(token, jwt, **kw))[0]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(mock: Mock):
    clients: list[H2Client] = []

    def make(unlimited: bool = False) -> H2Client:
        c = H2Client(mock, unlimited)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def new_apns_id() -> str:
    return str(uuid.uuid4())
