#!/usr/bin/env python3
"""A strict mock of Huawei Push Kit's v1 send API and its OAuth 2.0 token endpoint over TLS (ALPN h2 or HTTP/1.1).

Start-up prints one JSON line `{"port":…, "control_port":…, "ca_file":"…", "base_url":"…", "token_url":"…"}`
on stdout, then serves until SIGTERM, SIGINT or EOF on stdin (`--no-stdin-watch` to run it by hand).

- `POST /oauth2/v3/token`: the client-credentials grant; `client_id`/`client_secret` must be `--client-id` /
  `--client-secret` (else 400 with Huawei's numeric `error`/`sub_error`). Answers an opaque token living
  `token_lifetime_s` (with a `/` in it, which a client must JSON-decode, not scrape).
- `POST /v1/{appId}/messages:send`: `Authorization: Bearer <a live token it issued>` (missing or unknown: 401
  80200001; expired: 401 80200003), the configured app ID (else 80300002), the body rules (`hms_rules.check_send`:
  1–1000 distinct tokens, message ≤ 4096 bytes without its tokens, `data` a string, click_action with a
  notification, …). Tokens starting `illegal-` are refused: with other tokens in the request the answer is
  80100000 listing exactly them in `msg.illegal_tokens`; alone, 80300007. Every other token is delivered (counted
  per token). Scripted answers (`PUT /script`) replace the next requests' answers after the auth check.
The control API (plain HTTP/1.1 JSON on `control_port`): `GET /stats`, `GET /requests[?since=seq]`,
`GET /delivered`, `PUT /script` `{"answers":[{"code":"80200003"} | {"status":503} | …]}`, `POST /expire-tokens`,
`PUT /config`, `POST /reset`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hms_rules  # noqa: E402
from fcm_rules import Answer  # noqa: E402
from mock_fcm import serve_connection  # noqa: E402  (the same HTTP/2 + HTTP/1.1 connection loop)
from mock_server import (ControlAPI, announce_and_wait, apply_switches, argument_parser, by_status_json,  # noqa: E402
                         port_of, since, switches_json, tls_context)

TOKEN_PATH = "/oauth2/v3/token"


@dataclass
class Config:
    token_lifetime_s: int = 3600
    record: bool = True


@dataclass
class Stats:
    token_requests: int = 0
    tokens_issued: int = 0
    token_refusals: int = 0
    sends: int = 0
    by_code: collections.Counter = field(default_factory=collections.Counter)
    by_status: collections.Counter = field(default_factory=collections.Counter)
    delivered: collections.Counter = field(default_factory=collections.Counter)
    connections_opened: int = 0
    protocols: collections.Counter = field(default_factory=collections.Counter)


class MockState:
    def __init__(self, app_id: str, client_id: str, client_secret: str, config: Config) -> None:
        self.app_id = app_id
        self.client_id = client_id
        self.client_secret = client_secret
        self.initial_config = Config(**config.__dict__)
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.config = Config(**self.initial_config.__dict__)
        self.tokens: dict[str, hms_rules.IssuedToken] = {}
        self.script: collections.deque[dict[str, Any]] = collections.deque()
        self.requests: list[dict[str, Any]] = []
        self.stats = Stats()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes, oversized: bool) -> Answer:
        if oversized:
            return hms_rules.result("80300008", "request too large", 413)
        if path == TOKEN_PATH and method == "POST":
            return self._token(headers, body)
        match = hms_rules.SEND_PATH.fullmatch(path)
        if match is None or method != "POST":
            return Answer(404, {"code": "404", "msg": f"no route {method} {path}"})
        return self._send(match.group(1), headers, body)

    def _token(self, headers: dict[str, str], body: bytes) -> Answer:
        self.stats.token_requests += 1
        refusal = hms_rules.check_token_request(headers.get("content-type"), body, self.client_id, self.client_secret)
        if refusal is not None:
            self.stats.token_refusals += 1
            return refusal
        token, answer = hms_rules.issue_token(time.time(), self.config.token_lifetime_s)
        self.tokens[token.value] = token
        self.stats.tokens_issued += 1
        return answer

    def _send(self, app_id: str, headers: dict[str, str], body: bytes) -> Answer:
        self.stats.sends += 1
        message, tokens, error = hms_rules.check_send(body)
        answer = self._answer(app_id, headers.get("authorization", ""), message, tokens, error)
        self.stats.by_code[answer.body.get("code", "")] += 1
        self.stats.by_status[answer.status] += 1
        if self.config.record:
            self.requests.append({"seq": self.stats.sends, "app_id": app_id, "tokens": tokens,
                                  "message": {k: v for k, v in (message or {}).items() if k != "token"},
                                  "status": answer.status, "code": answer.body.get("code"), "msg": answer.body.get("msg"),
                                  "content_type": headers.get("content-type")})
        return answer

    def _answer(self, app_id: str, authorization: str, message: Any, tokens: list[str], error: Answer | None) -> Answer:
        scheme, _, value = authorization.partition(" ")
        issued = self.tokens.get(value) if scheme.lower() == "bearer" else None
        if issued is None:
            return hms_rules.result("80200001", "Oauth authentication error", 401)
        if issued.expires_at <= time.time():
            return hms_rules.result("80200003", "Oauth Token expired", 401)
        if app_id != self.app_id:
            return hms_rules.result("80300002", "APP is forbidden to send", 403)
        if self.script:
            step = self.script.popleft()
            status = int(step.get("status", 200 if "code" in step else 503))
            if "code" in step:
                return hms_rules.result(str(step["code"]), str(step.get("msg", "scripted")), status)
            return Answer(status, {"msg": "traffic control"},
                          tuple(("retry-after", str(step["retry_after"])) for _ in [0] if "retry_after" in step))
        if error is not None:
            return error
        illegal = [t for t in tokens if t.startswith("illegal-")]
        if illegal and len(illegal) == len(tokens):
            return hms_rules.result("80300007", "All the tokens are invalid", 400)
        for token in tokens:
            if token not in illegal:
                self.stats.delivered[token] += 1
        return hms_rules.partial(illegal, len(tokens)) if illegal else hms_rules.result("80000000")


class HMSControlAPI(ControlAPI):
    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        state: MockState = self.state
        if path == "/config" and method == "PUT":
            candidate = Config(**state.config.__dict__)
            apply_switches(candidate, body)
            if candidate.token_lifetime_s < 1:
                raise ValueError("token_lifetime_s must be >= 1")
            state.config = candidate
            return 200, switches_json(state.config)
        if path == "/config" and method == "GET":
            return 200, switches_json(state.config)
        if path == "/script" and method == "PUT":
            answers = body.get("answers")
            if not isinstance(answers, list) or not all(isinstance(a, dict) and set(a) <= {"code", "status", "msg", "retry_after"}
                                                        for a in answers):
                raise ValueError("answers: a list of {code, status, msg, retry_after}")
            state.script.extend(answers)
            return 200, {"queued": len(state.script)}
        if path == "/requests" and method == "GET":
            return 200, [r for r in state.requests if r["seq"] > since(params)]
        if path == "/delivered" and method == "GET":
            return 200, dict(state.stats.delivered)
        if path == "/stats" and method == "GET":
            s = state.stats
            return 200, {"token_requests": s.token_requests, "tokens_issued": s.tokens_issued,
                         "token_refusals": s.token_refusals, "sends": s.sends, "by_code": dict(s.by_code),
                         "by_status": by_status_json(s.by_status), "delivered": sum(s.delivered.values()),
                         "connections_opened": s.connections_opened, "protocols": dict(s.protocols),
                         "script_left": len(state.script)}
        if path == "/expire-tokens" and method == "POST":
            for token in state.tokens.values():
                token.expires_at = 0
            return 200, {"expired": len(state.tokens)}
        return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argument_parser("Strict mock Huawei Push Kit v1 + OAuth token endpoint, with a control API.", "HMS and token")
    p.add_argument("--app-id", default="100000001")
    p.add_argument("--client-id", help="default: the app ID")
    p.add_argument("--client-secret", default="test-client-secret")
    p.add_argument("--token-lifetime-s", type=int, default=3600)
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    state = MockState(args.app_id, args.client_id or args.app_id, args.client_secret,
                      Config(token_lifetime_s=args.token_lifetime_s))
    with tls_context(args, "mock-hms-", ["h2", "http/1.1"]) as (ctx, ca_file):
        server = await asyncio.start_server(lambda r, w: serve_connection(state, r, w), args.host, args.port, ssl=ctx)
        control = await asyncio.start_server(HMSControlAPI(state).handle, args.host, args.control_port)
        base_url = f"https://{args.host}:{port_of(server)}"
        await announce_and_wait(args, [server, control], {
            "port": port_of(server), "control_port": port_of(control), "ca_file": ca_file,
            "base_url": base_url, "token_url": base_url + TOKEN_PATH, "app_id": args.app_id})


def main() -> None:
    asyncio.run(serve(parse_args(sys.argv[1:])))


if __name__ == "__main__":
    main()
