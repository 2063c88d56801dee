#!/usr/bin/env python3
"""A strict stand-in of Pusher Beams' publish API and device DELETE over TLS (ALPN h2 or HTTP/1.1), for the
Beams bridge (docs/MIGRATING.md). Rules: `beams_rules.py`.

Start-up prints one JSON line `{"port":…, "control_port":…, "ca_file":"…", "base_url":"…", "instance_id":"…"}`
on stdout, then serves until SIGTERM, SIGINT or EOF on stdin (`--no-stdin-watch` to run it by hand).

- `POST /publish_api/v1/instances/{id}/publishes/{interests|users}`: the instance id must be `--instance-id` (else
  404), `Authorization: Bearer --secret-key` (missing: 400, wrong: 401), then 100 requests/s per instance (the
  101st in a second: 429 with `Retry-After: 1`), then scripted answers, then the body rules (content type, 10 KiB /
  200 KiB, JSON object, 1-100 valid interests or 1-1000 unique user ids, a platform section). A 200 answers a fresh
  `publishId` and records the publish; it also "delivers" it to every registered device that matches (`GET
  /delivered`), as Beams would.
- `DELETE /device_api/v1/instances/{id}/devices/{platform}/{deviceId}`: no credentials; a registered device is
  removed (200 `{}`), an unknown one answers 404 "Device not found".
The control API (plain HTTP/1.1 JSON on `control_port`): `GET /publishes[?since=seq]`, `GET /deletes`,
`GET /stats`, `PUT /devices/{platform}/{deviceId}` `{"interests":[…], "user": "…"}` (a device still at Beams),
`GET /devices`, `GET /delivered` (device id → notifications), `PUT /script` `{"answers":[{"status":429,
"retry_after":2} | {"status":402} | {"status":503} | {"status":400, "description": "…"}]}` (each replaces the
next publish's answer after the auth check), `POST /reset`.
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
import beams_rules  # noqa: E402
from fcm_rules import Answer  # noqa: E402
from mock_fcm import serve_connection  # noqa: E402  (the same HTTP/2 + HTTP/1.1 connection loop)
from mock_server import ControlAPI, announce_and_wait, argument_parser, by_status_json, port_of, since, tls_context  # noqa: E402

TITLES = {400: "Bad request", 401: "Unauthorized", 402: "Payment Required", 404: "Instance not found",
          422: "Unprocessable Entity", 429: "Rate Limited", 500: "Something went wrong", 502: "Bad Gateway",
          503: "Service Unavailable"}


@dataclass
class Stats:
    requests: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    connections_opened: int = 0
    protocols: collections.Counter = field(default_factory=collections.Counter)


class MockState:
    def __init__(self, instance_id: str, secret: str) -> None:
        self.instance_id = instance_id
        self.secret = secret
        self.reset()

    def reset(self) -> None:
        self.script: collections.deque[dict[str, Any]] = collections.deque()
        self.publishes: list[dict[str, Any]] = []
        self.deletes: list[dict[str, Any]] = []
        self.devices: dict[str, dict[str, Any]] = {}  # "platform/id" -> {"interests": [...], "user": ...}
        self.delivered: collections.Counter = collections.Counter()
        self.window = beams_rules.RateWindow()
        self.stats = Stats()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes, oversized: bool) -> Answer:
        self.stats.requests += 1
        answer = self._handle(method, path, headers, body, oversized)
        self.stats.by_status[answer.status] += 1
        return answer

    def _handle(self, method: str, path: str, headers: dict[str, str], body: bytes, oversized: bool) -> Answer:
        match = beams_rules.PUBLISH_PATH.fullmatch(path)
        if match and method == "POST":
            return self._publish(match.group(1), match.group(2), headers, body, oversized)
        match = beams_rules.DEVICE_PATH.fullmatch(path)
        if match and method == "DELETE":
            return self._delete(match.group(1), match.group(2), match.group(3), headers)
        return Answer(404, {"error": "Not found", "description": f"no route {method} {path}"})

    def _publish(self, instance: str, kind: str, headers: dict[str, str], body: bytes, oversized: bool) -> Answer:
        if instance != self.instance_id:
            return beams_rules.instance_not_found()
        refusal = beams_rules.check_auth(headers, self.secret)
        if refusal is not None:
            return refusal
        if not self.window.admit(time.monotonic()):
            return beams_rules.rate_limited()
        if self.script:
            step = self.script.popleft()
            status = int(step.get("status", 503))
            extra = (("retry-after", str(step["retry_after"])),) if "retry_after" in step else ()
            return beams_rules.error(status, TITLES.get(status, "Error"),
                                     str(step.get("description", "scripted answer")), extra)
        if oversized:
            return beams_rules.error(400, "Bad request", "Request body size is too large")
        root, refusal = beams_rules.check_publish(kind, headers, body)
        if refusal is not None:
            return refusal
        publish_id, answer = beams_rules.published()
        targets = root[kind]
        self.publishes.append({"seq": len(self.publishes) + 1, "kind": kind, "publish_id": publish_id,
                               "targets": targets, "body": root, "library": headers.get("x-pusher-library")})
        for key, device in self.devices.items():
            hit = (kind == "interests" and set(device.get("interests", [])) & set(targets)) or \
                  (kind == "users" and device.get("user") in targets)
            if hit:
                self.delivered[key] += 1
        return answer

    def _delete(self, instance: str, platform: str, device_id: str, headers: dict[str, str]) -> Answer:
        if instance != self.instance_id:
            return beams_rules.instance_not_found()
        key = f"{platform}/{device_id}"
        self.deletes.append({"seq": len(self.deletes) + 1, "device": key,
                             "authorization": headers.get("authorization")})
        if self.devices.pop(key, None) is None:
            return beams_rules.error(404, "Device not found", "Device could not be found")
        return Answer(200, {})


class BeamsControlAPI(ControlAPI):
    def dispatch(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any] | None:
        state: MockState = self.state
        if path == "/publishes" and method == "GET":
            return 200, [p for p in state.publishes if p["seq"] > since(params)]
        if path == "/deletes" and method == "GET":
            return 200, state.deletes
        if path.startswith("/devices/") and method == "PUT":
            key = path[len("/devices/"):]
            if key.split("/")[0] not in ("apns", "fcm", "web") or key.count("/") != 1:
                raise ValueError("PUT /devices/{apns|fcm|web}/{deviceId}")
            state.devices[key] = {"interests": list(body.get("interests", [])), "user": body.get("user")}
            return 200, state.devices[key]
        if path == "/devices" and method == "GET":
            return 200, state.devices
        if path == "/delivered" and method == "GET":
            return 200, dict(state.delivered)
        if path == "/script" and method == "PUT":
            answers = body.get("answers")
            if not isinstance(answers, list) or not all(
                    isinstance(a, dict) and set(a) <= {"status", "retry_after", "description"} for a in answers):
                raise ValueError("answers: a list of {status, retry_after, description}")
            state.script.extend(answers)
            return 200, {"queued": len(state.script)}
        if path == "/stats" and method == "GET":
            s = state.stats
            return 200, {"requests": s.requests, "by_status": by_status_json(s.by_status),
                         "publishes": len(state.publishes), "deletes": len(state.deletes),
                         "script_left": len(state.script), "protocols": dict(s.protocols)}
        return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argument_parser("Strict stand-in of the Pusher Beams publish API and device DELETE.", "Beams")
    p.add_argument("--instance-id", required=True)
    p.add_argument("--secret-key", required=True)
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    state = MockState(args.instance_id, args.secret_key)
    with tls_context(args, "mock-beams-", ["h2", "http/1.1"]) as (ctx, ca_file):
        server = await asyncio.start_server(lambda r, w: serve_connection(state, r, w), args.host, args.port, ssl=ctx)
        control = await asyncio.start_server(BeamsControlAPI(state).handle, args.host, args.control_port)
        await announce_and_wait(args, [server, control], {
            "port": port_of(server), "control_port": port_of(control), "ca_file": ca_file,
            "base_url": f"https://{args.host}:{port_of(server)}", "instance_id": args.instance_id})


def main() -> None:
    asyncio.run(serve(parse_args(sys.argv[1:])))


if __name__ == "__main__":
    main()
