#!/usr/bin/env python3
"""A strict mock of Apple's APNs provider API: TLS + ALPN h2 + HTTP/2, Apple's checks, statuses and reasons.

Start-up prints one JSON line `{"port":…, "control_port":…, "ca_file":"…"}` on stdout, then serves until SIGTERM,
SIGINT or EOF on stdin (so a mock whose parent died never lingers; pass `--no-stdin-watch` to run it by hand).

The request rules live in `apns_rules.py`; behaviours (scripted answers per device token) and the control API
(plain HTTP/1.1 JSON on `control_port`) live here. See `README.md` next to this file for the API and choices.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import ssl
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes
from hyperframe.frame import GoAwayFrame

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apns_broadcast  # noqa: E402  (sibling module: broadcast channel APIs)
import apns_rules  # noqa: E402  (sibling module; the script is run by path)
from apns_rules import ConnectionAuth, KeyRing, KeyTokenFloor, Policy, Request, Verdict  # noqa: E402
from apns_cert_rules import ClientCertificate  # noqa: E402
from mock_server import (ControlAPI, PerToken, announce_and_wait, apply_switches, argument_parser,  # noqa: E402
                         by_status_json, port_of, since, switches_json, tls_context)

# A client sending far more than any valid payload gets 413; the mock stops storing bytes beyond this.
MAX_STORED_BODY = 64 * 1024
# How long a connection that sent GOAWAY waits for its in-flight answers before closing anyway.
GOAWAY_DRAIN_S = 5.0
# `drop_after`: a connection that reached its answer count answers nothing more, sends a PING behind its last
# answer and resets once the client acknowledged it: the acknowledgement proves the client read every answer
# written before, so an answer the mock counted as sent was never thrown away unread by the reset (a fixed wait
# did not: on a loaded machine the client had not read the socket yet, and resent devices already answered).
# The reset then waits `DROP_GRACE_S` more, for the client to hand over what it read; a client that never
# acknowledges is reset after `GOAWAY_DRAIN_S`. Every request still in flight is cut off unanswered.
DROP_GRACE_S = 0.05
DROP_PING = b"dropping"
TOKEN_FLOOR_SCOPES = ("connection", "key")
ACTIONS = ("answer", "goaway", "goaway_unanswered", "drop", "answer_then_drop")


# MARK: - Behaviours and shared state


@dataclass
class Behaviour:
    """A scripted answer for a device token (or a token prefix ending in `*`).

    `status`/`reason`/`timestamp`: the answer (410 gets `timestamp`, now in ms when not given).
    `times`: apply to the first N valid requests, then answer normally (None: forever).
    `delay_ms`: wait before answering. `action`: `answer` (default); `goaway`: answer, then GOAWAY carrying
    `{"reason":…}` as debug data and close once in-flight streams are answered; `goaway_unanswered`: GOAWAY
    whose last-stream-id excludes this stream (the client may retry it), no answer; `drop`: close the TCP
    connection without answering. `goaway_error`: the GOAWAY error code (default 0, NO_ERROR).
    Behaviours apply only to requests that pass every check: a broken request still gets Apple's error.
    """

    status: int = 200
    reason: str | None = None
    timestamp: int | None = None
    times: int | None = None
    delay_ms: int = 0
    action: str = "answer"
    goaway_error: int = 0
    used: int = 0

    @staticmethod
    def parse(body: dict[str, Any]) -> "Behaviour":
        known = {"status", "reason", "timestamp", "times", "delay_ms", "action", "goaway_error"}
        unknown = set(body) - known
        if unknown:
            raise ValueError(f"unknown behaviour fields: {sorted(unknown)}")
        b = Behaviour(
            status=int(body.get("status", 200)),
            reason=body.get("reason"),
            timestamp=None if body.get("timestamp") is None else int(body["timestamp"]),
            times=None if body.get("times") is None else int(body["times"]),
            delay_ms=int(body.get("delay_ms", 0)),
            action=str(body.get("action", "answer")),
            goaway_error=int(body.get("goaway_error", 0)),
        )
        if b.action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}")
        if b.status != 200 and not b.reason:
            raise ValueError("an error status needs a reason")
        return b

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "timestamp": self.timestamp, "times": self.times,
                "delay_ms": self.delay_ms, "action": self.action, "goaway_error": self.goaway_error,
                "used": self.used}


@dataclass
class Config:
    """Run-time switches (`PUT /config`). Defaults come from the command line."""

    delay_ms: int = 0
    max_streams: int = 1000
    record: bool = True
    record_limit: int = 10_000
    require_push_type: bool = True
    # Added to the wall clock for every time rule (token age, refresh interval, 410 timestamps), so tests can
    # move the mock's "now" along with a client's injected clock instead of waiting 20-60 minutes.
    clock_offset_s: float = 0.0
    # Seconds without any frame from the client after which a connection gets GOAWAY {"reason":"IdleTimeout"}
    # and is closed, as APNs closes idle connections (0: never). Any frame counts, PING included.
    idle_timeout_s: float = 0.0
    # A uniformly random extra delay of 0..N ms per answer on top of `delay_ms`, so answers overtake each other.
    delay_jitter_ms: int = 0
    # After this many answers on a connection, GOAWAY {"reason":"Shutdown"} with last-stream-id = the highest
    # stream received so far: those streams are still answered, later ones refused; then close (0: never).
    goaway_after: int = 0
    # After this many answers on a connection, answer nothing more and abort the TCP connection DROP_GRACE_S
    # later, with whatever is in flight unanswered (0: never).
    drop_after: int = 0
    # Where the 20-minute provider-token refresh floor applies: "connection" (Apple's documented rule) or "key"
    # (also across connections and client restarts, as APNs has been observed to enforce it; see KeyTokenFloor).
    token_floor_scope: str = "connection"
    # A graceful close (after GOAWAY, on the client's GOAWAY) keeps reading for up to this many seconds before
    # closing the socket, so no answer already written is lost to a TCP reset (see `APNsConnection._close`);
    # 0 closes at once, as a careless server would, and answers written just before may never arrive.
    linger_s: float = 1.0
    # Apple's order on a new token-auth connection: SETTINGS_MAX_CONCURRENT_STREAMS stays 1 until the first answer
    # to an authenticated request has been written, and the SETTINGS frame raising it to `max_streams` follows
    # that answer in the same write (so a client reads both in one go). Off: the raise is sent as soon as the
    # first request's token is verified, before its answer (and before `delay_ms`).
    raise_streams_after_answer: bool = False


@dataclass
class Stats:
    requests: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    by_reason: collections.Counter = field(default_factory=collections.Counter)
    per_token: PerToken = field(default_factory=PerToken)
    connections_opened: int = 0
    refused_streams: int = 0
    goaways_sent: int = 0
    connections_dropped: int = 0
    max_concurrent_streams: int = 0
    # Answers actually written to a connection, per token and status (`per_token` counts decisions, including
    # answers never sent because the connection was dropped or the stream was above a GOAWAY's last-stream-id).
    sent_per_token: PerToken = field(default_factory=PerToken)
    # Requests decided but never answered (dropped, above a GOAWAY's last-stream-id, reset by the client, or
    # their connection closed before the delayed answer).
    unanswered: int = 0


class MockState:
    """Everything shared by connections and the control API. Single-threaded (asyncio), so no locks."""

    def __init__(self, keys: KeyRing, topics: frozenset[str], sandbox: bool, config: Config) -> None:
        self.keys = keys
        self.topics = topics
        self.sandbox = sandbox
        self.initial_config = Config(**config.__dict__)
        self.config = config
        self.behaviours: dict[str, Behaviour] = {}
        self.prefix_behaviours: list[tuple[str, Behaviour]] = []  # longest prefix first
        self.requests: collections.deque[dict[str, Any]] = collections.deque(maxlen=config.record_limit)
        self.seq = 0
        self.stats = Stats()
        self.connections: dict[int, "APNsConnection"] = {}
        self.next_connection_id = 1
        self.key_floor = KeyTokenFloor()
        # `--client-ca`: every connection must present a client certificate issued by that CA (certificate auth).
        self.client_certificates = False
        self.broadcast = apns_broadcast.BroadcastState()

    def policy(self) -> Policy:
        return Policy(topics=self.topics, require_push_type=self.config.require_push_type,
                      environment="sandbox" if self.sandbox else "production")

    def floor(self) -> KeyTokenFloor | None:
        """The per-key refresh floor when `token_floor_scope` is "key"."""
        return self.key_floor if self.config.token_floor_scope == "key" else None

    def set_behaviour(self, key: str, behaviour: Behaviour) -> None:
        if key.endswith("*"):
            prefix = key[:-1].lower()
            self.prefix_behaviours = [(p, b) for p, b in self.prefix_behaviours if p != prefix]
            self.prefix_behaviours.append((prefix, behaviour))
            self.prefix_behaviours.sort(key=lambda pb: -len(pb[0]))
        else:
            self.behaviours[key.lower()] = behaviour

    def clear_behaviours(self) -> None:
        self.behaviours.clear()
        self.prefix_behaviours.clear()

    def behaviour_for(self, token: str) -> Behaviour | None:
        """The behaviour that still applies to `token` (exact match first, then the longest prefix)."""
        key = token.lower()
        found = self.behaviours.get(key)
        if found is None:
            for prefix, b in self.prefix_behaviours:  # a handful of rules at most: linear is fine
                if key.startswith(prefix):
                    found = b
                    break
        if found is None or (found.times is not None and found.used >= found.times):
            return None
        found.used += 1
        return found

    def apply_config(self, body: dict[str, Any]) -> None:
        apply_switches(Config(), body)  # refuses unknown fields and unconvertible values before anything changes
        if "token_floor_scope" in body and body["token_floor_scope"] not in TOKEN_FLOOR_SCOPES:
            raise ValueError(f"token_floor_scope must be one of {TOKEN_FLOOR_SCOPES}")
        for name in ("delay_jitter_ms", "goaway_after", "drop_after", "record_limit"):
            if name in body and int(body[name]) < 0:
                raise ValueError(f"{name} must be >= 0")
        apply_switches(self.config, body)
        if "record_limit" in body:
            self.requests = collections.deque(self.requests, maxlen=self.config.record_limit)
        if "max_streams" in body:
            for conn in list(self.connections.values()):
                conn.readvertise_max_streams()
        if "idle_timeout_s" in body:
            for conn in list(self.connections.values()):
                conn.arm_idle_timer()

    def reset(self) -> None:
        self.config = Config(**self.initial_config.__dict__)
        self.clear_behaviours()
        self.requests = collections.deque(maxlen=self.config.record_limit)
        self.stats = Stats()

    def count(self, token: str | None, verdict_status: int, reason: str | None) -> None:
        s = self.stats
        s.requests += 1
        s.by_status[verdict_status] += 1
        if reason:
            s.by_reason[reason] += 1
        s.per_token.add(token, verdict_status)

    def count_sent(self, token: str | None, status: int) -> None:
        self.stats.sent_per_token.add(token, status)

    def stats_json(self, include_tokens: bool = True) -> dict[str, Any]:
        s = self.stats
        out: dict[str, Any] = {
            "requests": s.requests,
            "by_status": by_status_json(s.by_status),
            "by_reason": dict(s.by_reason),
            "connections_opened": s.connections_opened,
            "connections_open": len(self.connections),
            "refused_streams": s.refused_streams,
            "goaways_sent": s.goaways_sent,
            "connections_dropped": s.connections_dropped,
            "unanswered": s.unanswered,
            "max_concurrent_streams_observed": s.max_concurrent_streams,
            "connections": [c.summary() for c in self.connections.values()],
        }
        if include_tokens:
            out["per_token"] = s.per_token.to_json()
            out["sent_per_token"] = s.sent_per_token.to_json()
        return out


# MARK: - One HTTP/2 connection


class _RefusingH2Connection(h2.connection.H2Connection):
    """h2 treats a stream over SETTINGS_MAX_CONCURRENT_STREAMS as a connection error (GOAWAY); APNs refuses the
    stream instead (RST_STREAM REFUSED_STREAM). The mock counts streams itself, so h2's own check is disabled.
    h2's property also prunes closed streams from its table, in O(open streams); it still runs, but only every
    128th new stream, so the cost per request stays constant at 1000 concurrent streams."""

    _new_streams = 0

    @property
    def open_inbound_streams(self) -> int:  # type: ignore[override]
        self._new_streams += 1
        if self._new_streams % 128 == 0:
            super().open_inbound_streams
        return 0


@dataclass
class _Stream:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytearray = field(default_factory=bytearray)
    size: int = 0


class APNsConnection(asyncio.Protocol):
    """One client connection: h2 state, the provider-token state, in-flight streams and scripted actions."""

    def __init__(self, state: MockState) -> None:
        self.state = state
        self.id = 0
        self.transport: asyncio.Transport | None = None
        self.h2: _RefusingH2Connection | None = None
        self.auth = ConnectionAuth()
        self.streams: dict[int, _Stream] = {}
        self.pending: set[int] = set()  # accepted streams not answered yet (what MAX_CONCURRENT_STREAMS limits)
        self.max_in_flight = 0
        self.advertised_max_streams = 1
        # `raise_streams_after_answer`: authenticated, and the raise waits for the first answer to be written.
        self.raise_after_answer = False
        self.requests = 0
        self.answers = 0
        self.dropping = False
        self.lingering = False
        self.goaway_sent = False
        self.last_stream_id: int | None = None
        self.closed = False
        self.last_activity = time.monotonic()
        self.idle_timer: asyncio.TimerHandle | None = None
        self.certificate: ClientCertificate | None = None  # the peer's, with --client-ca

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        # APNs offers only h2. A client that negotiates no ALPN at all still gets HTTP/2 (prior knowledge):
        # aioapns sets no ALPN and works against APNs. An HTTP/1.1 request then fails the h2 preface check and
        # the connection is dropped without a status, as APNs does.
        if ssl_object is None or ssl_object.selected_alpn_protocol() not in ("h2", None):
            transport.abort()
            self.closed = True
            return
        if self.state.client_certificates:
            # The handshake already verified the chain and validity (CERT_REQUIRED); read what it allows.
            try:
                self.certificate = ClientCertificate.from_der(ssl_object.getpeercert(binary_form=True) or b"")
            except ValueError:
                transport.abort()
                self.closed = True
                return
        self.id = self.state.next_connection_id
        self.state.next_connection_id += 1
        self.state.connections[self.id] = self
        self.state.stats.connections_opened += 1
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self.h2 = _RefusingH2Connection(config=config)
        # Apple: under token auth only one stream until a request with a valid token has been posted.
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
            },
        )
        self.h2.initiate_connection()
        if self.certificate is not None:
            # Trust came with the handshake: no token to wait for before the full stream budget.
            self._advertise(self.state.config.max_streams)
        self._flush()
        self.arm_idle_timer()

    def data_received(self, data: bytes) -> None:
        if self.h2 is None or self.closed:
            return
        self.last_activity = time.monotonic()
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._flush()
            self._close()
            return
        for event in events:
            if self.closed:
                return
            if isinstance(event, h2.events.RequestReceived):
                self._on_request(event)
            elif isinstance(event, h2.events.DataReceived):
                self._on_data(event)
            elif isinstance(event, h2.events.StreamEnded):
                self._on_end(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                self.streams.pop(event.stream_id, None)
                self.pending.discard(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._close()
                return
            elif isinstance(event, h2.events.PingAckReceived) and self.dropping and event.ping_data == DROP_PING:
                asyncio.get_running_loop().call_later(DROP_GRACE_S, lambda: self._close(abort=True))
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        self.state.connections.pop(self.id, None)

    # Streams

    def _on_request(self, event: h2.events.RequestReceived) -> None:
        sid = event.stream_id
        assert self.h2 is not None
        if self.goaway_sent or len(self.pending) >= self.advertised_max_streams:
            try:
                self.h2.reset_stream(sid, ErrorCodes.REFUSED_STREAM)
            except h2.exceptions.StreamClosedError:
                pass  # the client reset it already (later in the same read); either way it is not processed
            self.state.stats.refused_streams += 1
            return
        method = path = ""
        headers: list[tuple[str, str]] = []
        for raw_name, raw_value in event.headers or []:
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            if name == ":method":
                method = value
            elif name == ":path":
                path = value
            elif not name.startswith(":"):
                headers.append((name, value))
        self.streams[sid] = _Stream(method, path, headers)
        self.pending.add(sid)
        if len(self.pending) > self.max_in_flight:
            self.max_in_flight = len(self.pending)
            if self.max_in_flight > self.state.stats.max_concurrent_streams:
                self.state.stats.max_concurrent_streams = self.max_in_flight

    def _on_data(self, event: h2.events.DataReceived) -> None:
        assert self.h2 is not None
        # Flow control: give the window back at once, or large uploads stall.
        self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        stream = self.streams.get(event.stream_id)
        if stream is None:
            return
        stream.size += len(event.data)
        if len(stream.body) < MAX_STORED_BODY:
            stream.body += event.data[: MAX_STORED_BODY - len(stream.body)]

    def _on_end(self, sid: int) -> None:
        stream = self.streams.pop(sid, None)
        if stream is None:
            return
        state = self.state
        self.requests += 1
        req = Request(stream.method, stream.path, stream.headers, bytes(stream.body), stream.size)
        was_authenticated = self.auth.authenticated
        now = time.time() + state.config.clock_offset_s
        if apns_broadcast.handles(req.path):
            checked = state.broadcast.check(req, state.keys, self.auth, state.topics,
                                            "sandbox" if state.sandbox else "production", now, state.floor())
        else:
            checked = apns_rules.check_request(req, state.keys, self.auth, state.policy(), now, state.floor(),
                                               certificate=self.certificate)
        if not was_authenticated and self.auth.authenticated:
            if state.config.raise_streams_after_answer:
                self.raise_after_answer = True
            else:
                self._advertise(state.config.max_streams)

        verdict = checked.verdict
        behaviour = state.behaviour_for(checked.token) if verdict.ok and checked.token else None
        action = "answer"
        timestamp = None
        delay_ms = state.config.delay_ms
        if state.config.delay_jitter_ms > 0:
            delay_ms += random.randint(0, state.config.delay_jitter_ms)
        if behaviour is not None:
            verdict = Verdict(behaviour.status, behaviour.reason)
            action = behaviour.action
            delay_ms += behaviour.delay_ms
            if verdict.status == 410:
                timestamp = behaviour.timestamp if behaviour.timestamp is not None else int(now * 1000)

        apns_id = req.header("apns-id") or str(uuid.uuid4())
        state.count(checked.token, verdict.status, verdict.reason)
        if state.config.record:
            state.seq += 1
            jwt = checked.jwt
            state.requests.append({
                "seq": state.seq,
                "time": time.time(),
                "connection": self.id,
                "stream": sid,
                "method": req.method,
                "path": req.path,
                "token": checked.token,
                "headers": _headers_json(req.headers),
                "payload": checked.payload if checked.payload is not None else _try_json(req.body),
                "payload_size": stream.size,
                "status": verdict.status,
                "reason": verdict.reason,
                "timestamp": timestamp,
                "apns_id": apns_id,
                "action": action,
                "jwt": None if jwt is None else {"kid": jwt.kid, "iss": jwt.iss, "iat": jwt.iat},
                "certificate": None if self.certificate is None else self.certificate.to_json(),
            })

        def finish() -> None:
            if self.closed or sid not in self.pending or self.dropping:
                # Connection gone (or about to be aborted), or the client reset the stream meanwhile.
                self.state.stats.unanswered += 1
                return
            if action == "drop":
                self.state.stats.connections_dropped += 1
                self.state.stats.unanswered += 1
                self._close(abort=True)
                return
            if action == "goaway_unanswered" or (self.last_stream_id is not None and sid > self.last_stream_id):
                # Streams above GOAWAY's last-stream-id were "not processed": no answer, the client retries.
                self.pending.discard(sid)
                self.state.stats.unanswered += 1
                if action == "goaway_unanswered":
                    self._goaway(sid - 2 if sid > 2 else 0, verdict.reason, behaviour.goaway_error if behaviour else 0)
                self._maybe_finish_goaway()
                return
            if isinstance(checked, apns_broadcast.BroadcastChecked):
                if verdict.ok and checked.kind == "broadcast":
                    state.broadcast.record(checked, req, time.time())
                self._respond(sid, verdict, apns_id, timestamp, checked.token,
                              checked.response_headers if 200 <= verdict.status < 300 or behaviour is None else [],
                              checked.response_body if behaviour is None else None)
            else:
                self._respond(sid, verdict, apns_id, timestamp, checked.token)
            if action == "answer_then_drop":
                self._flush()
                self.state.stats.connections_dropped += 1
                self._close(abort=True)
                return
            if action == "goaway":
                self._goaway(self.h2.highest_inbound_stream_id if self.h2 else sid, verdict.reason,
                             behaviour.goaway_error if behaviour else 0)
            self._after_answer()
            self._flush()
            self._maybe_finish_goaway()

        if delay_ms > 0:
            asyncio.get_running_loop().call_later(delay_ms / 1000.0, finish)
        else:
            finish()

    def _after_answer(self) -> None:
        """Counts an answer and fires the connection-level faults configured by answer count."""
        self.answers += 1
        config = self.state.config
        if config.goaway_after and self.answers >= config.goaway_after and not self.goaway_sent and self.h2:
            # Every stream received so far has been read and will be answered: that is the last-stream-id.
            self._goaway(self.h2.highest_inbound_stream_id, "Shutdown", 0)
        if config.drop_after and self.answers >= config.drop_after and not self.dropping:
            self.dropping = True
            self.state.stats.connections_dropped += 1
            # The streams left in flight count as unanswered when their (delayed) answers come due. The PING goes
            # out with this answer (the caller flushes); its acknowledgement starts the reset.
            self.h2.ping(DROP_PING)
            asyncio.get_running_loop().call_later(GOAWAY_DRAIN_S, lambda: self._close(abort=True))

    def _respond(self, sid: int, verdict: Verdict, apns_id: str, timestamp: int | None,
                 token: str | None = None, extra_headers: list[tuple[str, str]] | None = None,
                 ok_body: bytes | None = None) -> None:
        assert self.h2 is not None
        self.pending.discard(sid)
        self.state.count_sent(token, verdict.status)
        headers = [(":status", str(verdict.status)), ("apns-id", apns_id)] + (extra_headers or [])
        if 200 <= verdict.status < 300 and (ok_body is not None or verdict.status != 200):
            # Broadcast APIs: 201/204 without a body, or a JSON body (channel read, list).
            try:
                if ok_body is None:
                    self.h2.send_headers(sid, headers, end_stream=True)
                else:
                    self.h2.send_headers(sid, headers + [("content-type", "application/json"),
                                                         ("content-length", str(len(ok_body)))])
                    self.h2.send_data(sid, ok_body, end_stream=True)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                return
            self._raise_after_first_answer()
            return
        if self.state.sandbox and verdict.ok:  # the Delivery Log id exists only for accepted notifications
            headers.append(("apns-unique-id", str(uuid.uuid4())))
        try:
            if verdict.ok:
                # APNs answers 200 with headers only: END_STREAM on HEADERS, never a DATA frame.
                self.h2.send_headers(sid, headers, end_stream=True)
            else:
                body: dict[str, Any] = {"reason": verdict.reason}
                if timestamp is not None:
                    body["timestamp"] = timestamp
                data = json.dumps(body, separators=(",", ":")).encode()
                headers += [("content-type", "application/json"), ("content-length", str(len(data)))]
                self.h2.send_headers(sid, headers)
                self.h2.send_data(sid, data, end_stream=True)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            return  # the client reset the stream while the answer was delayed
        self._raise_after_first_answer()

    def _raise_after_first_answer(self) -> None:
        """`raise_streams_after_answer`: the SETTINGS frame that lifts the one-stream limit, queued right behind
        the connection's first answer (the caller's flush writes both together), as Apple sends it."""
        if self.raise_after_answer and not self.goaway_sent:
            self.raise_after_answer = False
            self._advertise(self.state.config.max_streams)

    # Connection-level actions

    def _advertise(self, value: int) -> None:
        assert self.h2 is not None
        self.advertised_max_streams = value
        self.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: value})

    def readvertise_max_streams(self) -> None:
        """Sends the configured limit to an authenticated connection (`PUT /config {"max_streams":…}`)."""
        if self.auth.authenticated and not self.raise_after_answer and not self.closed and self.h2 is not None:
            self._advertise(self.state.config.max_streams)
            self._flush()

    def _goaway(self, last_stream_id: int, reason: str | None, error_code: int) -> None:
        """Sends GOAWAY with `{"reason":…}` as debug data, then answers what is in flight and closes.

        h2's `close_connection` forbids sending anything afterwards, but streams up to `last_stream_id` still
        deserve their answers, so the frame is written directly and h2 keeps its open state."""
        if self.goaway_sent or self.transport is None:
            return
        self._flush()
        frame = GoAwayFrame(0)
        frame.last_stream_id = last_stream_id
        frame.error_code = error_code
        frame.additional_data = json.dumps({"reason": reason or "Shutdown"}, separators=(",", ":")).encode()
        self.transport.write(frame.serialize())
        self.goaway_sent = True
        self.last_stream_id = last_stream_id
        self.state.stats.goaways_sent += 1
        asyncio.get_running_loop().call_later(GOAWAY_DRAIN_S, self._close)

    def shut_down(self) -> None:
        """GOAWAY covering every stream received (those are still answered), then close once they are."""
        if self.h2 is not None and not self.closed:
            self._goaway(self.h2.highest_inbound_stream_id, "Shutdown", 0)
            self._maybe_finish_goaway()

    def _maybe_finish_goaway(self) -> None:
        if self.goaway_sent and not self.pending:
            self._close()

    def _flush(self) -> None:
        if self.h2 is not None and self.transport is not None and not self.closed:
            data = self.h2.data_to_send()
            if data:
                self.transport.write(data)

    def arm_idle_timer(self) -> None:
        """(Re)arms the idle check from the current config; called at start and on `PUT /config`."""
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        timeout = self.state.config.idle_timeout_s
        if timeout > 0 and not self.closed:
            left = self.last_activity + timeout - time.monotonic()
            self.idle_timer = asyncio.get_running_loop().call_later(max(left, 0.0), self._idle_check)

    def _idle_check(self) -> None:
        self.idle_timer = None
        timeout = self.state.config.idle_timeout_s
        if self.closed or timeout <= 0:
            return
        if time.monotonic() - self.last_activity >= timeout:
            last = self.h2.highest_inbound_stream_id if self.h2 else 0
            self._goaway(last, "IdleTimeout", 0)
            self._maybe_finish_goaway()
        else:
            self.arm_idle_timer()  # activity since: check again when the new deadline passes

    def _close(self, abort: bool = False) -> None:
        if self.closed:
            return
        linger = self.state.config.linger_s
        if not abort and linger > 0 and self.transport is not None and not self.lingering:
            # Lingering close: closing a socket that still has unread bytes from the client (a stream it opened
            # before seeing our GOAWAY, a WINDOW_UPDATE) makes the kernel send RST and throw away answers still in
            # its send buffer, so a client would never see answers the mock counted as sent. Keep reading (and
            # refusing new streams) until the client closes or `linger_s` passes, as nginx's lingering_close does.
            self._flush()
            self.lingering = True
            asyncio.get_running_loop().call_later(linger, self._close)
            return
        self.closed = True
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
        self.state.connections.pop(self.id, None)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "requests": self.requests, "tokens_seen": self.auth.tokens_seen,
                "bound_kid": self.auth.bound_kid, "advertised_max_streams": self.advertised_max_streams,
                "max_concurrent_streams_observed": self.max_in_flight, "in_flight": len(self.pending)}


def _try_json(body: bytes) -> Any:
    """The body as JSON for the request log, also when the request failed before the payload check."""
    try:
        return json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None


def _headers_json(headers: list[tuple[str, str]]) -> dict[str, Any]:
    """Header names to values; a repeated header becomes a list so duplicates stay visible."""
    out: dict[str, Any] = {}
    for name, value in headers:
        if name in out:
            prev = out[name]
            out[name] = prev + [value] if isinstance(prev, list) else [prev, value]
        else:
            out[name] = value
    return out


# MARK: - Control API (HTTP/1.1 JSON)


class APNsControlAPI(ControlAPI):
    """`PUT /behaviours/<token>`, `GET|DELETE /behaviours`, `DELETE /behaviours/<token>`, `GET|PUT /config`,
    `GET /requests[?token=…&since=seq]`, `GET /arrivals[?group=…]`, `GET /stats[?tokens=0]`, `POST /reset`,
    `POST /connections/goaway`;
    broadcast channels: `GET /broadcasts[?since=seq]`, `GET /channels`, `PUT /broadcast/config`."""

    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        state: MockState = self.state
        if path.startswith("/behaviours/") and method == "PUT":
            state.set_behaviour(path[len("/behaviours/"):], Behaviour.parse(body))
            return 200, {"ok": True}
        if path.startswith("/behaviours/") and method == "DELETE":
            key = path[len("/behaviours/"):].lower()
            state.behaviours.pop(key, None)
            state.prefix_behaviours = [(p, b) for p, b in state.prefix_behaviours if p + "*" != key]
            return 200, {"ok": True}
        if path == "/behaviours" and method == "DELETE":
            state.clear_behaviours()
            return 200, {"ok": True}
        if path == "/behaviours" and method == "GET":
            out = {k: b.to_json() for k, b in state.behaviours.items()}
            out.update({p + "*": b.to_json() for p, b in state.prefix_behaviours})
            return 200, out
        if path == "/config" and method == "PUT":
            state.apply_config(body)
            return 200, switches_json(state.config)
        if path == "/config" and method == "GET":
            return 200, switches_json(state.config)
        if path == "/requests" and method == "GET":
            token = params.get("token")
            return 200, [r for r in state.requests if r["seq"] > since(params) and (token is None or r["token"] == token)]
        if path == "/arrivals" and method == "GET":
            return 200, arrivals(state.requests, params.get("group", ""))
        if path == "/stats" and method == "GET":
            return 200, state.stats_json(include_tokens=params.get("tokens", "1") != "0")
        if path == "/broadcasts" and method == "GET":
            return 200, [r for r in state.broadcast.broadcasts if r["seq"] > since(params)]
        if path == "/channels" and method == "GET":
            return 200, state.broadcast.channel_list()
        if path == "/broadcast/config" and method == "PUT":
            state.broadcast.apply_config(body)
            return 200, state.broadcast.config.to_json()
        if path == "/connections/goaway" and method == "POST":
            # Every open connection gets GOAWAY {"reason":"Shutdown"} covering the streams it received, is drained
            # and closed, so the client's next requests open new (cold) connections.
            closing = list(state.connections.values())
            for conn in closing:
                conn.shut_down()
            return 200, {"connections": len(closing)}
        return None

    def reset(self) -> None:
        self.state.broadcast.reset()
        self.state.reset()


def arrivals(records: Any, group: str) -> dict[str, list[float]]:
    """Arrival times (UNIX seconds) of the recorded requests, grouped by a dotted payload path (`aps.alert.title`;
    empty: one group ""), oldest first: enough to measure a publish's rate per second at the receiving end."""
    out: dict[str, list[float]] = {}
    for record in records:
        value: Any = record["payload"]
        for part in (group.split(".") if group else []):
            value = value.get(part) if isinstance(value, dict) else None
        out.setdefault("" if not group else str(value), []).append(round(record["time"], 4))
    return out


# MARK: - Start-up


def parse_args(argv: list[str]) -> argparse.Namespace:
    # `--cert` stays an alias of `--tls-cert` (the `--key KEYID=pem` option took the shorter name).
    p = argument_parser("Strict mock APNs (HTTP/2 over TLS) with a JSON control API.", "APNs", ["--cert"])
    p.add_argument("--team-id", default="TEAMID1234")
    p.add_argument("--key", action="append", default=[], metavar="KEYID=PEM",
                   help="a signing key of the team: public PEM (or private PEM/.p8); repeatable")
    p.add_argument("--topic", action="append", default=[], help="an allowed bundle ID; repeatable")
    p.add_argument("--max-streams", type=int, default=1000,
                   help="SETTINGS_MAX_CONCURRENT_STREAMS after the first request with a valid token")
    p.add_argument("--environment", choices=("sandbox", "production"), default="sandbox",
                   help="the environment played: sandbox also answers apns-unique-id; a client certificate "
                        "must be marked for it (403 BadCertificateEnvironment)")
    p.add_argument("--delay-ms", type=int, default=0, help="delay every answer (a slow APNs)")
    p.add_argument("--record-limit", type=int, default=10_000, help="requests kept for GET /requests")
    p.add_argument("--lenient-push-type", action="store_true", help="a missing apns-push-type means alert")
    p.add_argument("--token-floor-scope", choices=TOKEN_FLOOR_SCOPES, default="connection",
                   help="where the 20-minute token refresh floor applies (key: across connections and restarts)")
    p.add_argument("--client-ca", help="require a client certificate issued by this CA (certificate auth; see "
                   "apns_cert_rules.py): no provider token needed, topics and push types from the certificate")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    keys: dict[str, Any] = {}
    for spec in args.key:
        kid, sep, path = spec.partition("=")
        if not sep or not kid:
            raise SystemExit(f"--key expects KEYID=path, got {spec!r}")
        try:
            with open(path, "rb") as f:
                keys[kid] = apns_rules.load_public_key(f.read())
        except (OSError, ValueError) as e:
            raise SystemExit(f"mock_apns: cannot load key {kid} from {path}: {e}")
    config = Config(delay_ms=args.delay_ms, max_streams=args.max_streams, record_limit=args.record_limit,
                    require_push_type=not args.lenient_push_type, token_floor_scope=args.token_floor_scope)
    state = MockState(KeyRing(args.team_id, keys), frozenset(args.topic), args.environment == "sandbox", config)
    state.client_certificates = bool(args.client_ca)

    with tls_context(args, "mock-apns-", ["h2"]) as (ctx, ca_file):
        if args.client_ca:
            # No certificate, one from another CA, an expired or a not-yet-valid one: the handshake fails.
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: APNsConnection(state), args.host, args.port, ssl=ctx,
                                          reuse_address=True)
        control = await asyncio.start_server(APNsControlAPI(state).handle, args.host, args.control_port)
        await announce_and_wait(args, [server, control], {"port": port_of(server), "control_port": port_of(control),
                                                          "ca_file": ca_file})
        for conn in list(state.connections.values()):
            conn._close(abort=True)


def main() -> None:
    asyncio.run(serve(parse_args(sys.argv[1:])))


if __name__ == "__main__":
    main()
