"""What the strict mocks (`mock_apns.py`, `mock_fcm.py`, `mock_push_service.py`) share, written once.

The test CA and the server's TLS context, the command-line options every mock takes, the JSON control API's
HTTP/1.1 loop, run-time switches (`PUT /config`), counters per device token, and the start-up contract: one JSON
line on stdout, then serve until SIGTERM, SIGINT or EOF on stdin (a mock whose parent died exits instead of
lingering). Each mock keeps only its own protocol rules and state.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import datetime
import json
import os
import shutil
import signal
import ssl
import sys
import tempfile
from typing import Any, Iterable

# MARK: - Test CA and TLS


def new_ca(name: str, days_before: float = 1, days_after: float = 30) -> tuple[Any, Any]:
    """A P-256 CA key and its self-signed certificate, valid from `days_before` days ago for `days_after` days."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=days_before))
        .not_valid_after(now + datetime.timedelta(days=days_after))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca


def make_certificates(directory: str) -> tuple[str, str, str]:
    """A throw-away CA and a server certificate for 127.0.0.1/::1/localhost; returns (ca, cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, ca = new_ca("mock-apns test CA")
    ca_name = ca.subject
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1")),
            x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = os.path.join(directory, "ca.pem")
    cert_path = os.path.join(directory, "server.pem")
    key_path = os.path.join(directory, "server.key")
    with open(ca_path, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return ca_path, cert_path, key_path


@contextlib.contextmanager
def tls_context(args: argparse.Namespace, prefix: str, alpn: list[str]) -> Any:
    """Yields (server context, CA file to report): `--tls-cert/--tls-key[/--tls-ca]`, else a generated CA and
    certificate in a temporary directory removed on exit. TLS 1.2 minimum (Apple's and Google's floor)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        if args.tls_cert:
            ca_file, cert_file, key_file = args.tls_ca or args.tls_cert, args.tls_cert, args.tls_key
        else:
            ca_file, cert_file, key_file = make_certificates(tmp)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert_file, key_file)
        ctx.set_alpn_protocols(alpn)
        yield ctx, ca_file
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# MARK: - Command line and start-up


def argument_parser(description: str, service: str, tls_cert_aliases: Iterable[str] = ()) -> argparse.ArgumentParser:
    """The options every mock takes: addresses, TLS files and `--no-stdin-watch`; the mock adds its own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help=f"{service} port; 0 picks a free one")
    p.add_argument("--control-port", type=int, default=0, help="control API port; 0 picks a free one")
    p.add_argument("--tls-cert", *tls_cert_aliases, dest="tls_cert", help="server certificate chain (default: generated)")
    p.add_argument("--tls-key", dest="tls_key", help="server private key (with --tls-cert)")
    p.add_argument("--tls-ca", dest="tls_ca", help="CA file reported as ca_file (with --tls-cert)")
    p.add_argument("--no-stdin-watch", action="store_true", help="do not exit on EOF on stdin")
    return p


def port_of(server: asyncio.base_events.Server) -> int:
    return server.sockets[0].getsockname()[1]


async def announce_and_wait(args: argparse.Namespace, servers: list[asyncio.base_events.Server],
                            announcement: dict[str, Any]) -> None:
    """Prints the start-up line, serves until SIGTERM, SIGINT or EOF on stdin, then closes `servers`."""
    loop = asyncio.get_running_loop()
    stop = loop.create_future()

    def request_stop() -> None:
        if not stop.done():
            stop.set_result(None)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, request_stop)
    if not args.no_stdin_watch:
        # EOF on stdin means the parent is gone (or closed our pipe): exit rather than linger.
        loop.add_reader(sys.stdin.fileno(), lambda: request_stop() if not os.read(sys.stdin.fileno(), 4096)
                        else None)
    sys.stdout.write(json.dumps(announcement) + "\n")
    sys.stdout.flush()
    await stop
    for server in servers:
        server.close()


# MARK: - Run-time switches and counters


def apply_switches(switches: Any, body: dict[str, Any], what: str = "config") -> None:
    """Sets the fields of the dataclass `switches` named in `body`, each converted to the field's type. A field it
    does not have, or a value that does not convert, is refused (`ValueError` or `TypeError`, a 400 on the control
    API) before anything changes: every value is converted before the first is set."""
    known = {f.name for f in dataclasses.fields(switches)}
    unknown = set(body) - known
    if unknown:
        raise ValueError(f"unknown {what} fields: {sorted(unknown)}")
    converted = {name: type(getattr(switches, name))(value) for name, value in body.items()}
    for name, value in converted.items():
        setattr(switches, name, value)


def switches_json(switches: Any) -> dict[str, Any]:
    return dict(switches.__dict__)


def by_status_json(counter: collections.Counter) -> dict[str, int]:
    """A Counter keyed by HTTP status as JSON (string keys)."""
    return {str(k): v for k, v in counter.items()}


class PerToken(dict):
    """Answers per device token and status (token -> Counter)."""

    def add(self, token: str | None, status: int) -> None:
        if token is not None:
            self.setdefault(token, collections.Counter())[status] += 1

    def to_json(self) -> dict[str, dict[str, int]]:
        return {t: by_status_json(c) for t, c in self.items()}


# MARK: - Control API (HTTP/1.1 JSON)


def query_params(query: str) -> dict[str, str]:
    return dict(p.partition("=")[::2] for p in query.split("&") if p)


class ControlAPI:
    """The control API's HTTP/1.1 server (keep-alive supported). A mock subclasses it and implements `dispatch`;
    a `ValueError` or `TypeError` there (bad JSON, unknown field, bad value) answers 400, `None` answers 404.
    `POST /reset`, which every mock's tests call before each test (`mock_process._reset`), is answered here:
    `reset()` forgets the state (`state.reset()` unless the mock overrides it)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                parts = line.decode("latin-1").split()
                if len(parts) != 3:
                    break
                method, target, version = parts
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                status, payload = self.route(method, target, body)
                data = json.dumps(payload, separators=(",", ":")).encode()
                close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: {'close' if close else 'keep-alive'}\r\n\r\n"
                    .encode() + data
                )
                await writer.drain()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    def route(self, method: str, target: str, body: bytes) -> tuple[int, Any]:
        path, _, query = target.partition("?")
        try:
            parsed = json.loads(body) if body.strip() else {}
            if path == "/reset" and method == "POST":
                self.reset()
                return 200, {"ok": True}
            answer = self.dispatch(method, path, query_params(query), parsed)
        except (ValueError, TypeError) as e:
            return 400, {"error": str(e)}
        return answer if answer is not None else (404, {"error": f"no route {method} {path}"})

    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        raise NotImplementedError

    def reset(self) -> None:
        self.state.reset()


def since(params: dict[str, str]) -> int:
    """The `since=<seq>` query parameter of the record listings (0: everything kept)."""
    return int(params.get("since", "0"))
