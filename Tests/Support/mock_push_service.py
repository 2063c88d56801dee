#!/usr/bin/env python3
"""A strict stand-in for a Web Push service (RFC 8030, VAPID RFC 8292, encryption RFC 8291) over TLS.

It plays both the push service and the browsers behind it: `POST /subscriptions` on the control API creates a
subscription the way a browser would (a fresh P-256 key pair and auth secret, endpoint on this service), and
every push to it is DECRYPTED with that subscription's private key, so an accepted message proves the browser
could read it. The checks are pure functions in `webpush_rules.py` (independent of the Swift code: `cryptography`
and `http_ece`).

Start-up prints one JSON line `{"port":…, "control_port":…, "ca_file":"…", "origin":"https://127.0.0.1:…"}` on
stdout, then serves until SIGTERM, SIGINT or EOF on stdin (pass `--no-stdin-watch` to run it by hand).
See `README.md` next to this file for the checks and the control API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import ssl
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webpush_rules  # noqa: E402  (sibling module; the script is run by path)
from mock_server import ControlAPI, announce_and_wait, argument_parser, port_of, since, tls_context  # noqa: E402
from webpush_rules import Rejection, b64url, point_of  # noqa: E402

# The mock reads at most this much of a body; a Content-Length above it gets 413 and the connection closes.
MAX_READ_BODY = 64 * 1024
MAX_HEADER_LINE = 8192
MAX_HEADERS = 100
# Scripted answers for valid pushes to a subscription created with this marker.
MARKERS: dict[str, int] = {"gone-404": 404, "gone-410": 410, "too-large": 413, "rate-limited": 429, "unavailable": 503,
                           "no-subscriber-507": 507}
# UnifiedPush push servers the stand-in can play per subscription (docs/API.md "UnifiedPush"): the endpoint shape
# each gives out and how it answers an accepted message. `webpush` is the browsers' push service (201 + Location).
#   ntfy:     https://host/up<id>?up=1, 200 with a JSON message (ntfy never answers 201); 507 when the topic has no
#             recent subscriber (marker no-subscriber-507)
#   nextpush: https://host/index.php/apps/uppush/push/<id>, 201 with `TTL: 0`; 404 for an unknown token
#   autopush: https://host/wpush/v2/<id>, 201 with Location; 404/410/413 and 503 with Retry-After by marker
FLAVOURS = ("webpush", "ntfy", "nextpush", "autopush")


# MARK: - Subscriptions and records


@dataclass
class Subscription:
    """What a browser holds: the private key and auth secret; what the application server gets: endpoint, keys."""

    id: str
    private_key: ec.EllipticCurvePrivateKey
    auth: bytes
    marker: str | None = None
    application_server_key: str | None = None  # the `k` every push must carry, when the "browser" pinned one
    retry_after: str | None = "30"  # None: 429/503 without `Retry-After`
    marker_times: int | None = None  # answer with the marker this many times, then accept; None: always
    flavour: str = "webpush"

    def path(self) -> str:
        return {"ntfy": f"/up{self.id}?up=1", "nextpush": f"/index.php/apps/uppush/push/{self.id}",
                "autopush": f"/wpush/v2/{self.id}"}.get(self.flavour, f"/push/{self.id}")

    def to_json(self, origin: str) -> dict[str, Any]:
        return {
            "id": self.id, "endpoint": f"{origin}{self.path()}", "flavour": self.flavour,
            "p256dh": b64url(point_of(self.private_key.public_key())), "auth": b64url(self.auth),
            "private_key": b64url(self.private_key.private_numbers().private_value.to_bytes(32, "big")),
            "marker": self.marker, "application_server_key": self.application_server_key,
        }


@dataclass
class MockState:
    origin: str
    record_limit: int
    default_key: str | None = None
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0

    def subscribe(self, body: dict[str, Any]) -> Subscription:
        marker = body.get("marker")
        if marker is not None and marker not in MARKERS:
            raise ValueError(f"marker must be one of {sorted(MARKERS)}")
        flavour = body.get("flavour", "webpush")
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour must be one of {FLAVOURS}")
        sub = Subscription(id=uuid.uuid4().hex, private_key=ec.generate_private_key(ec.SECP256R1()),
                           auth=secrets.token_bytes(16), marker=marker,
                           application_server_key=body.get("application_server_key", self.default_key),
                           retry_after=None if body.get("retry_after", "30") is None else str(body.get("retry_after", "30")),
                           marker_times=None if body.get("marker_times") is None else int(body["marker_times"]),
                           flavour=flavour)
        self.subscriptions[sub.id] = sub
        return sub

    def record(self, entry: dict[str, Any], accepted: bool) -> None:
        self.seq += 1
        entry["seq"] = self.seq
        self.requests.append(entry)
        if accepted:
            self.messages.append(entry)
        del self.requests[:-self.record_limit]
        del self.messages[:-self.record_limit]

    def reset(self) -> None:
        self.messages.clear()
        self.requests.clear()


# MARK: - One push request


def subscription_id(path: str) -> str | None:
    """The subscription a push path names, in any flavour's endpoint shape; None for anything else."""
    route, _, query = path.partition("?")
    for prefix in ("/push/", "/index.php/apps/uppush/push/", "/wpush/v2/"):
        if route.startswith(prefix):
            return route[len(prefix):]
    if route.startswith("/up") and query == "up=1":
        return route[len("/up"):]
    return None


def handle_push(state: MockState, method: str, path: str, headers: dict[str, str], body: bytes,
                now: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Checks one request in order (first failure answers) and returns (status, extra headers, JSON body)."""
    entry: dict[str, Any] = {"method": method, "path": path, "headers": headers, "body_size": len(body)}
    try:
        if method != "POST":
            raise Rejection(405, "only POST")
        sub_id = subscription_id(path)
        if sub_id is None or sub_id not in state.subscriptions or state.subscriptions[sub_id].path() != path:
            raise Rejection(404, "no such subscription")
        sub = state.subscriptions[sub_id]
        entry["subscription"] = sub.id
        vapid = webpush_rules.verify_vapid(headers.get("authorization"), state.origin, now, sub.application_server_key)
        entry["vapid"] = {"claims": vapid.claims, "k": vapid.public_key}
        entry.update(webpush_rules.check_headers(headers))
        plaintext = webpush_rules.decrypt(body, sub.private_key, sub.auth)
        entry["plaintext_b64"] = b64url(plaintext)
        try:
            entry["plaintext"] = plaintext.decode()
        except UnicodeDecodeError:
            entry["plaintext"] = None
        if sub.marker is not None and (sub.marker_times is None or sub.marker_times > 0):
            if sub.marker_times is not None:
                sub.marker_times -= 1
            status = MARKERS[sub.marker]
            extra = {"Retry-After": sub.retry_after} if status in (429, 503) and sub.retry_after is not None else {}
            if status == 410 and sub.flavour == "autopush":
                extra["Cache-Control"] = "max-age=86400"
            entry.update(status=status, reason=sub.marker)
            state.record(entry, accepted=False)
            return status, extra, {"reason": sub.marker}
        message_id = uuid.uuid4().hex
        if sub.flavour == "ntfy":
            entry.update(status=200, message_id=message_id)
            state.record(entry, accepted=True)
            return 200, {}, {"id": message_id, "time": now, "event": "message", "topic": f"up{sub.id}"}
        entry.update(status=201, message_id=message_id)
        state.record(entry, accepted=True)
        if sub.flavour == "nextpush":
            return 201, {"TTL": "0"}, {}
        return 201, {"Location": f"{state.origin}/message/{message_id}", "TTL": str(entry["ttl"])}, {}
    except Rejection as e:
        entry.update(status=e.status, reason=e.reason)
        state.record(entry, accepted=False)
        return e.status, {}, {"reason": e.reason}


# MARK: - HTTP/1.1 over TLS


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, str, dict[str, str], int | None] | None:
    line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or len(line) > MAX_HEADER_LINE:
        raise ValueError("bad request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        if len(h) > MAX_HEADER_LINE:
            raise ValueError("header line too long")
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep:
            raise ValueError("header without colon")
        name = name.strip().lower()
        if name in headers:
            raise ValueError(f"repeated header {name}")
        headers[name] = value.strip()
    else:
        raise ValueError("too many headers")
    if "transfer-encoding" in headers:
        raise ValueError("chunked bodies are not accepted; send Content-Length")
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise ValueError("bad Content-Length")
    return method, target, version, headers, int(length)


def write_response(writer: asyncio.StreamWriter, status: int, extra: dict[str, str], payload: Any,
                   close: bool) -> None:
    data = b"" if status == 201 else json.dumps(payload, separators=(",", ":")).encode()
    phrase = {200: "OK", 201: "Created"}.get(status, "Error")
    head = [f"HTTP/1.1 {status} {phrase}", f"Content-Length: {len(data)}",
            f"Connection: {'close' if close else 'keep-alive'}"]
    if data:
        head.append("Content-Type: application/json")
    head += [f"{k}: {v}" for k, v in extra.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)


async def serve_push(state: MockState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                request = await read_request(reader)
            except ValueError as e:
                write_response(writer, 400, {}, {"reason": str(e)}, close=True)
                break
            if request is None:
                break
            method, target, version, headers, length = request
            close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
            if length > MAX_READ_BODY:
                state.record({"method": method, "path": target, "status": 413, "reason": "body over 64 KiB"}, False)
                write_response(writer, 413, {}, {"reason": "body too large"}, close=True)
                break
            body = await reader.readexactly(length) if length else b""
            status, extra, payload = handle_push(state, method, target, headers, body, int(time.time()))
            write_response(writer, status, extra, payload, close)
            await writer.drain()
            if close:
                break
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
        pass
    finally:
        writer.close()


# MARK: - Control API (HTTP/1.1 JSON)


class PushControlAPI(ControlAPI):
    """`POST /subscriptions` {marker?, application_server_key?, retry_after?, marker_times?, flavour?}, `GET /subscriptions`,
    `GET /messages[?subscription=id&since=seq]`, `GET /requests[?since=seq]`, `POST /reset`."""

    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        state: MockState = self.state
        if path == "/subscriptions" and method == "POST":
            return 200, state.subscribe(body).to_json(state.origin)
        if path == "/subscriptions" and method == "GET":
            return 200, [s.to_json(state.origin) for s in state.subscriptions.values()]
        if path == "/messages" and method == "GET":
            sub = params.get("subscription")
            return 200, [m for m in state.messages if m["seq"] > since(params) and (sub is None or m["subscription"] == sub)]
        if path == "/requests" and method == "GET":
            return 200, [r for r in state.requests if r["seq"] > since(params)]
        return None


# MARK: - Start-up


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argument_parser("Strict Web Push service stand-in (HTTP/1.1 over TLS) with a control API.", "push")
    p.add_argument("--vapid-key", help="base64url VAPID public key every subscription pins (default: per subscription)")
    p.add_argument("--record-limit", type=int, default=10_000, help="requests and messages kept")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    with tls_context(args, "mock-push-", ["http/1.1"]) as (ctx, ca_file):
        state = MockState(origin="", record_limit=args.record_limit, default_key=args.vapid_key)
        server = await asyncio.start_server(lambda r, w: serve_push(state, r, w), args.host, args.port, ssl=ctx,
                                            reuse_address=True)
        port = port_of(server)
        host = f"[{args.host}]" if ":" in args.host else args.host
        state.origin = f"https://{host}" + ("" if port == 443 else f":{port}")
        control = await asyncio.start_server(PushControlAPI(state).handle, args.host, args.control_port)
        await announce_and_wait(args, [server, control], {"port": port, "control_port": port_of(control),
                                                          "ca_file": ca_file, "origin": state.origin})


def main() -> None:
    asyncio.run(serve(parse_args(sys.argv[1:])))


if __name__ == "__main__":
    main()
