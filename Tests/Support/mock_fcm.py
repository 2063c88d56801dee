#!/usr/bin/env python3
"""A strict mock of Google's FCM HTTP v1 API and OAuth2 token endpoint over TLS (ALPN h2, or HTTP/1.1).

Start-up prints one JSON line `{"port":…, "control_port":…, "ca_file":"…", "token_uri":"…", "base_url":"…"}` on
stdout, then serves until SIGTERM, SIGINT or EOF on stdin (pass `--no-stdin-watch` to run it by hand).

- `POST /token`: the JWT-bearer grant; the RS256 assertion must verify under a `--service-account`'s key, with
  `aud` = `token_uri`. Answers an opaque access token living `token_lifetime_s` (default 3599).
- `POST /v1/projects/{project}/messages:send`: a live bearer token the mock issued (else 401 UNAUTHENTICATED),
  the configured project (else 404 NOT_FOUND), and the message schema (`fcm_rules.check_send`). Tokens starting
  `unregistered-`, `mismatch-`, `invalid-`, `quota-`, `unavailable-`, `internal-`, `thirdparty-` or `denied-`
  get FCM's error for that case (`quota-`/`unavailable-` with `Retry-After: retry_after_s`); others are accepted (200
  `{"name":"projects/{project}/messages/{id}"}`) and recorded.
The rules live in `fcm_rules.py`; the control API (plain HTTP/1.1 JSON on `control_port`) is described in
README.md next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import ssl
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fcm_rules  # noqa: E402  (sibling module; the script is run by path)
from fcm_rules import Account, Answer, TokenStore  # noqa: E402
from mock_server import (ControlAPI, PerToken, announce_and_wait, apply_switches, argument_parser,  # noqa: E402
                         by_status_json, port_of, since, switches_json, tls_context)

# What Google says with each OAuth2 error the `token_refusal` switch can script.
TOKEN_REFUSALS = {
    "invalid_grant": "Invalid JWT Signature.",
    "invalid_client": "The OAuth client was not found.",
    "unauthorized_client": "Client is unauthorized to retrieve access tokens using this method.",
}

# Bodies above this are refused with 413 before parsing (FCM's own limit is far lower, checked by the rules).
MAX_BODY = 256 * 1024


@dataclass
class Config:
    """Run-time switches (`PUT /config`)."""

    # Lifetime of issued access tokens (Google: 3599).
    token_lifetime_s: int = 3599
    # `Retry-After` on 429 and 503 answers; negative: no `Retry-After` header at all.
    retry_after_s: int = 1
    # Added to the wall clock for every time rule (assertion iat/exp, token expiry).
    clock_offset_s: float = 0.0
    record: bool = True
    record_limit: int = 10_000
    # Non-empty: the token endpoint refuses every assertion, valid or not, with this OAuth2 error (400; 401 for
    # `invalid_client`), as Google does for a deleted key (`invalid_grant` "Invalid JWT Signature.").
    token_refusal: str = ""
    # The next this-many token requests are answered 503 (Google's endpoint having a bad moment), then it serves again.
    token_unavailable: int = 0
    # Each `messages:send` is answered this long after it arrived (its record is written on arrival): a slow FCM.
    send_latency_ms: int = 0


@dataclass
class Behaviour:
    """A scripted answer for a device token or prefix (`*`): `answer` is a marker kind or `ok`; `times` limits it."""

    answer: str
    times: int | None = None
    used: int = 0

    @staticmethod
    def parse(body: dict[str, Any]) -> "Behaviour":
        unknown = set(body) - {"answer", "times"}
        if unknown:
            raise ValueError(f"unknown behaviour fields: {sorted(unknown)}")
        answer = str(body.get("answer", ""))
        if answer != "ok":
            fcm_rules.marker_answer(answer, 1)  # raises ValueError for an unknown kind
        times = body.get("times")
        return Behaviour(answer, None if times is None else int(times))


@dataclass
class Stats:
    token_requests: int = 0
    tokens_issued: int = 0
    token_refusals: collections.Counter = field(default_factory=collections.Counter)
    sends: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    per_token: PerToken = field(default_factory=PerToken)
    connections_opened: int = 0
    protocols: collections.Counter = field(default_factory=collections.Counter)


class MockState:
    """Everything shared by connections and the control API. Single-threaded (asyncio), so no locks."""

    def __init__(self, accounts: dict[str, Account], project: str, config: Config) -> None:
        self.accounts = accounts
        self.project = project
        self.initial_config = Config(**config.__dict__)
        self.config = config
        self.token_uri = ""
        self.tokens = TokenStore()
        self.behaviours: dict[str, Behaviour] = {}
        self.requests: collections.deque[dict[str, Any]] = collections.deque(maxlen=config.record_limit)
        self.token_log: collections.deque[dict[str, Any]] = collections.deque(maxlen=config.record_limit)
        self.seq = 0
        self.stats = Stats()

    def now(self) -> float:
        return time.time() + self.config.clock_offset_s

    def latency(self, path: str) -> float:
        """Seconds before a request to `path` is answered: `send_latency_ms` for sends, none for the token."""
        return 0.0 if path == "/token" else self.config.send_latency_ms / 1000

    def reset(self) -> None:
        self.config = Config(**self.initial_config.__dict__)
        self.behaviours.clear()
        self.requests = collections.deque(maxlen=self.config.record_limit)
        self.token_log = collections.deque(maxlen=self.config.record_limit)
        self.stats = Stats()

    def apply_config(self, body: dict[str, Any]) -> None:
        # Checked on a copy first: a refused change (400) leaves the running switches as they were.
        candidate = Config(**self.config.__dict__)
        apply_switches(candidate, body)
        if candidate.token_lifetime_s < 1:
            raise ValueError("token_lifetime_s must be >= 1")
        if candidate.record_limit < 0:
            raise ValueError("record_limit must be >= 0")
        if not 0 <= candidate.send_latency_ms <= 600_000:
            raise ValueError("send_latency_ms must be 0..600000")
        self.config = candidate
        self.requests = collections.deque(self.requests, maxlen=self.config.record_limit)

    def behaviour_for(self, token: str) -> str | None:
        """The scripted answer kind for `token`: a behaviour (exact, then longest prefix), else its marker."""
        found = self.behaviours.get(token)
        if found is None:
            for key in sorted((k for k in self.behaviours if k.endswith("*")), key=len, reverse=True):
                if token.startswith(key[:-1]):
                    found = self.behaviours[key]
                    break
        if found is not None and (found.times is None or found.used < found.times):
            found.used += 1
            return None if found.answer == "ok" else found.answer
        return fcm_rules.marker_kind(token)

    # Requests

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes, oversized: bool) -> Answer:
        if oversized:
            return fcm_rules.fcm_error(413, "INVALID_ARGUMENT", "Request payload size exceeds the limit")
        if path == "/token":
            return self._token(method, headers, body)
        match = fcm_rules.SEND_PATH.fullmatch(path)
        if match is None or method != "POST":
            return fcm_rules.fcm_error(404, "NOT_FOUND", f"No route {method} {path}")
        return self._send(match.group(1), headers, body)

    def _token(self, method: str, headers: dict[str, str], body: bytes) -> Answer:
        self.stats.token_requests += 1
        now = self.now()
        if method != "POST":
            answer = fcm_rules.oauth_error("invalid_request", "Bad Request: POST required", 405)
        elif self.config.token_unavailable > 0:
            self.config.token_unavailable -= 1
            answer = fcm_rules.oauth_error("temporarily_unavailable", "The service is currently unavailable.", 503)
        elif self.config.token_refusal:
            refusal = self.config.token_refusal
            answer = fcm_rules.oauth_error(refusal, TOKEN_REFUSALS.get(refusal, "Refused by the test"),
                                           401 if refusal == "invalid_client" else 400)
        else:
            checked = fcm_rules.check_assertion_request(headers.get("content-type"), body, self.accounts,
                                                        self.token_uri, now)
            if isinstance(checked, Account):
                self.stats.tokens_issued += 1
                answer = Answer(200, self.tokens.issue(checked, now, self.config.token_lifetime_s))
            else:
                answer = checked
        if not answer.ok:
            self.stats.token_refusals[answer.error_code or str(answer.status)] += 1
        self.token_log.append({"time": time.time(), "status": answer.status, "error": answer.body.get("error"),
                               "error_description": answer.body.get("error_description")})
        return answer

    def _send(self, project: str, headers: dict[str, str], body: bytes) -> Answer:
        self.stats.sends += 1
        account = self.tokens.check(headers.get("authorization"), self.now())
        message: dict[str, Any] | None = None
        validate_only = False
        device = None
        if account is None:
            answer = fcm_rules.UNAUTHENTICATED
        elif project != self.project:
            answer = fcm_rules.fcm_error(404, "NOT_FOUND", "Requested entity was not found.")
        else:
            message, validate_only, error = fcm_rules.check_send(body)
            device = message.get("token") if isinstance(message, dict) and isinstance(message.get("token"), str) else None
            kind = self.behaviour_for(device) if error is None and device is not None else None
            if error is not None:
                answer = error
            elif kind is not None:
                answer = fcm_rules.marker_answer(
                    kind, self.config.retry_after_s if self.config.retry_after_s >= 0 else None)
            else:
                self.seq += 1
                answer = Answer(200, {"name": f"projects/{project}/messages/0:{int(time.time() * 1000)}%{self.seq}"})
        self.stats.by_status[answer.status] += 1
        self.stats.per_token.add(device, answer.status)
        if self.config.record:
            self.requests.append({
                "seq": self.stats.sends,
                "time": time.time(), "project": project, "token": device,
                "account": None if account is None else account.client_email,
                "message": message, "validate_only": validate_only, "status": answer.status,
                "error_code": answer.error_code, "name": answer.body.get("name"),
            })
        return answer


# MARK: - Connections


def _encode(answer: Answer) -> tuple[int, list[tuple[str, str]], bytes]:
    data = json.dumps(answer.body, separators=(",", ":")).encode()
    headers = [("content-type", "application/json; charset=UTF-8"), ("content-length", str(len(data)))]
    return answer.status, headers + list(answer.headers), data


async def serve_connection(state: MockState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    state.stats.connections_opened += 1
    ssl_object = writer.get_extra_info("ssl_object")
    protocol = ssl_object.selected_alpn_protocol() if ssl_object else None
    state.stats.protocols[protocol or "none"] += 1
    try:
        if protocol == "h2":
            await _serve_h2(state, reader, writer)
        else:
            await _serve_http1(state, reader, writer)
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, h2.exceptions.ProtocolError, ValueError):
        pass
    except asyncio.CancelledError:
        pass  # the mock is shutting down with this connection still open
    finally:
        writer.close()


async def _serve_http1(state: MockState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        line = await reader.readline()
        if not line:
            return
        method, target, version = line.decode("latin-1").split()
        headers: dict[str, str] = {}
        while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        oversized = length > MAX_BODY
        body = b"" if oversized else await reader.readexactly(length)
        answer = state.handle(method, target, headers, body, oversized)
        await asyncio.sleep(_latency(state, target))
        status, out_headers, data = _encode(answer)
        head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n" + "".join(
            f"{n}: {v}\r\n" for n, v in out_headers)
        writer.write(head.encode() + b"\r\n" + data)
        await writer.drain()
        if oversized or headers.get("connection", "").lower() == "close":
            return


def _latency(state: Any, path: str) -> float:
    """The answer delay for `path`: the FCM state's `latency`; none for the stand-ins that share this connection loop
    (mock_beams.py, mock_hms.py) and have no such switch."""
    latency = getattr(state, "latency", None)
    return latency(path) if latency is not None else 0.0


def _answer(conn: h2.connection.H2Connection, stream_id: int, answer: Answer) -> None:
    status, out_headers, payload = _encode(answer)
    conn.send_headers(stream_id, [(":status", str(status))] + out_headers)
    conn.send_data(stream_id, payload, end_stream=True)


def _answer_later(conn: h2.connection.H2Connection, writer: asyncio.StreamWriter, stream_id: int,
                  answer: Answer) -> None:
    """A delayed answer (`send_latency_ms`), unless the client reset the stream or left meanwhile."""
    if writer.is_closing():
        return
    try:
        _answer(conn, stream_id, answer)
    except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
        return
    writer.write(conn.data_to_send())


async def _serve_h2(state: MockState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="latin-1"))
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    streams: dict[int, tuple[dict[str, str], bytearray]] = {}
    while True:
        data = await reader.read(65536)
        if not data:
            return
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                streams[event.stream_id] = (dict(event.headers), bytearray())
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id in streams:
                    body = streams[event.stream_id][1]
                    body += event.data[: MAX_BODY + 1 - len(body)]
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id in streams:
                headers, body = streams.pop(event.stream_id)
                answer = state.handle(headers.get(":method", ""), headers.get(":path", ""),
                                      {k: v for k, v in headers.items() if not k.startswith(":")},
                                      bytes(body), len(body) > MAX_BODY)
                delay = _latency(state, headers.get(":path", ""))
                if delay > 0:
                    asyncio.get_running_loop().call_later(delay, _answer_later, conn, writer, event.stream_id, answer)
                else:
                    _answer(conn, event.stream_id, answer)
            elif isinstance(event, h2.events.StreamReset):
                streams.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ConnectionTerminated):
                writer.write(conn.data_to_send())
                return
        writer.write(conn.data_to_send())
        await writer.drain()


# MARK: - Control API (HTTP/1.1 JSON)


class FCMControlAPI(ControlAPI):
    """`GET|PUT /config`, `PUT /behaviours/<token or prefix*>`, `GET|DELETE /behaviours`, `GET /requests[?token=…
    &since=seq]`, `GET /token-requests`, `GET /stats`, `POST /expire-tokens`, `POST /reset`."""

    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        state: MockState = self.state
        if path == "/config" and method == "PUT":
            state.apply_config(body)
            return 200, switches_json(state.config)
        if path == "/config" and method == "GET":
            return 200, switches_json(state.config)
        if path.startswith("/behaviours/") and method == "PUT":
            state.behaviours[path[len("/behaviours/"):]] = Behaviour.parse(body)
            return 200, {"ok": True}
        if path == "/behaviours" and method == "DELETE":
            state.behaviours.clear()
            return 200, {"ok": True}
        if path == "/behaviours" and method == "GET":
            return 200, {k: b.__dict__ for k, b in state.behaviours.items()}
        if path == "/requests" and method == "GET":
            token = params.get("token")
            return 200, [r for r in state.requests if r["seq"] > since(params) and (token is None or r["token"] == token)]
        if path == "/token-requests" and method == "GET":
            return 200, list(state.token_log)
        if path == "/stats" and method == "GET":
            s = state.stats
            return 200, {
                "token_requests": s.token_requests, "tokens_issued": s.tokens_issued,
                "token_refusals": dict(s.token_refusals), "sends": s.sends, "by_status": by_status_json(s.by_status),
                "per_token": s.per_token.to_json(), "connections_opened": s.connections_opened,
                "protocols": dict(s.protocols),
            }
        if path == "/expire-tokens" and method == "POST":
            return 200, {"expired": state.tokens.expire_all()}
        return None


# MARK: - Start-up


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argument_parser("Strict mock FCM HTTP v1 + OAuth2 token endpoint, with a control API.", "FCM and token")
    p.add_argument("--service-account", action="append", default=[], metavar="JSON",
                   help="a service-account file whose key may sign assertions; repeatable")
    p.add_argument("--project", help="the project messages:send accepts (default: the first account's project_id)")
    p.add_argument("--token-uri", help="the assertion's required aud (default: https://HOST:PORT/token)")
    p.add_argument("--token-lifetime-s", type=int, default=3599)
    p.add_argument("--retry-after-s", type=int, default=1)
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    accounts: dict[str, Account] = {}
    for path in args.service_account:
        try:
            with open(path, "rb") as f:
                account = fcm_rules.load_service_account(f.read())
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"mock_fcm: cannot load service account {path}: {e}")
        accounts[account.private_key_id] = account
    if not accounts:
        raise SystemExit("mock_fcm: at least one --service-account is required")
    project = args.project or next(iter(accounts.values())).project_id
    config = Config(token_lifetime_s=args.token_lifetime_s, retry_after_s=args.retry_after_s)
    state = MockState(accounts, project, config)

    # fcm.googleapis.com and oauth2.googleapis.com speak both.
    with tls_context(args, "mock-fcm-", ["h2", "http/1.1"]) as (ctx, ca_file):
        server = await asyncio.start_server(lambda r, w: serve_connection(state, r, w), args.host, args.port, ssl=ctx)
        control = await asyncio.start_server(FCMControlAPI(state).handle, args.host, args.control_port)
        base_url = f"https://{args.host}:{port_of(server)}"
        state.token_uri = args.token_uri or f"{base_url}/token"
        await announce_and_wait(args, [server, control], {
            "port": port_of(server), "control_port": port_of(control), "ca_file": ca_file,
            "token_uri": state.token_uri, "base_url": base_url, "project": project})


def main() -> None:
    asyncio.run(serve(parse_args(sys.argv[1:])))


if __name__ == "__main__":
    main()
