"""The rules of Pusher Beams' publish API and device DELETE, as pure functions (mock_beams.py serves them).

Sources, summarised in docs/BEAMS-PROTOCOL.md §2 and §8 (from Pusher's docs and recorded answers): `POST
/publish_api/v1/instances/{id}/publishes/{interests|users}` with `Authorization: Bearer <secret>` and
`Content-Type: application/json`; 1-100 interests matching `^[a-zA-Z0-9_\\-=@,.;]{1,164}$`, or 1-1000 unique user ids of
at most 164 bytes; at least one of `apns`, `fcm`, `web`; body at most 10 KiB (interests) or 200 KiB (users), else
400 "Request body size is too large"; 100 requests per second per instance, then 429; 402 once over plan; a 200
answers `{"publishId":"pubid-<uuid4>"}`. Errors are `{"error": title, "description": text}`. `DELETE
/device_api/v1/instances/{id}/devices/{apns|fcm|web}/{deviceId}` takes no credentials.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from fcm_rules import Answer

PUBLISH_PATH = re.compile(r"/publish_api/v1/instances/([^/]+)/publishes/(interests|users)")
DEVICE_PATH = re.compile(r"/device_api/v1/instances/([^/]+)/devices/(apns|fcm|web)/([^/]+)")
INTEREST = re.compile(r"[a-zA-Z0-9_\-=@,.;]{1,164}")
MAX_BODY = {"interests": 10 * 1024, "users": 200 * 1024}
MAX_INTERESTS = 100
MAX_USERS = 1000
MAX_USER_BYTES = 164
RATE_LIMIT = 100  # requests per second per instance


def error(status: int, title: str, description: str, headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    return Answer(status, {"error": title, "description": description}, headers, error_code=title)


def instance_not_found() -> Answer:
    return error(404, "Instance not found", "Could not find the instance")


def check_auth(headers: dict[str, str], secret: str) -> Answer | None:
    authorization = headers.get("authorization")
    if not authorization:
        return error(400, "Incomplete Request", "Authorization header is missing.")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or value != secret:
        return error(401, "Unauthorized", "Incorrect Secret Key")
    return None


def check_publish(kind: str, headers: dict[str, str], body: bytes) -> tuple[dict[str, Any] | None, Answer | None]:
    """(the publish, None) when Beams would take it (auth checked apart); else Beams' refusal."""
    if (headers.get("content-type") or "").split(";")[0].strip().lower() != "application/json":
        return None, error(400, "Invalid content type", "Only application/json is supported.")
    if len(body) > MAX_BODY[kind]:
        return None, error(400, "Bad request",
                           f"Request body size is too large (max {MAX_BODY[kind] // 1024}KiB)")
    try:
        root = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        root = None
    if not isinstance(root, dict):
        return None, error(400, "Bad request", "Failed to read body as a JSON object.")
    targets = root.get(kind)
    if not isinstance(targets, list) or not targets:
        return None, error(422, "Unprocessable Entity", f"`{kind}`: {kind} is required")
    if kind == "interests":
        if len(targets) > MAX_INTERESTS:
            return None, error(422, "Unprocessable Entity", f"`interests`: Array must have at most {MAX_INTERESTS} items")
        for i, name in enumerate(targets):
            if not isinstance(name, str) or not INTEREST.fullmatch(name):
                return None, error(422, "Unprocessable Entity",
                                   f"`interests.{i}`: Does not match pattern '^[a-zA-Z0-9_\\\\-=@,.;]+$'")
    else:
        if len(targets) > MAX_USERS:
            return None, error(422, "Unprocessable Entity", f"`users`: Array must have at most {MAX_USERS} items")
        if any(not isinstance(u, str) or not u or len(u.encode()) > MAX_USER_BYTES for u in targets):
            return None, error(422, "Unprocessable Entity", "`users`: user ids are 1 to 164 bytes")
        if len(set(targets)) != len(targets):
            return None, error(422, "Unprocessable Entity", "`users`: array items must be unique")
    if not any(isinstance(root.get(p), dict) for p in ("apns", "fcm", "web")):
        return None, error(422, "Unprocessable Entity", "at least one of `apns`, `fcm`, `web` is required")
    return root, None


def published() -> tuple[str, Answer]:
    publish_id = f"pubid-{uuid.uuid4()}"
    return publish_id, Answer(200, {"publishId": publish_id})


class RateWindow:
    """Beams' 100 requests per second per instance: the 101st request within any second gets 429."""

    def __init__(self, limit: int = RATE_LIMIT, window: float = 1.0) -> None:
        self.limit = limit
        self.window = window
        self.times: list[float] = []

    def admit(self, now: float) -> bool:
        self.times = [t for t in self.times if t > now - self.window]
        if len(self.times) >= self.limit:
            return False
        self.times.append(now)
        return True


def rate_limited(retry_after: int | None = 1) -> Answer:
    headers = (("retry-after", str(retry_after)),) if retry_after is not None else ()
    return error(429, "Rate Limited", "Too many requests being made in quick succession (max 100 RPS).", headers)
