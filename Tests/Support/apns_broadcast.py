"""Apple's broadcast channel APIs (iOS 18) for the strict mock APNs: channel management and broadcast sends.

Pure rules plus a small state (the channel store), no sockets: `mock_apns.py` hands every request whose path
starts with `/1/apps/` or `/4/broadcasts/apps/` to `BroadcastState.check` and answers with what it returns.
Shapes follow `docs/APNS.md` "Broadcast channels"; where Apple is silent the choice is written next to the rule
and in `README.md`.

Management (`/1/apps/<bundle>/channels`, `/1/apps/<bundle>/all-channels`):
  create POST + `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}` -> 201 + `apns-channel-id`;
  read GET + `apns-channel-id` -> 200 `{"message-storage-policy", "push-type"}`; delete DELETE -> 204;
  list GET all-channels -> 200 `{"channels": [...]}`. At most `channel_cap` (10,000) channels per (bundle,
  environment): `400 CannotCreateChannelConfig` beyond.
Send (`POST /4/broadcasts/apps/<bundle>`), checks in this order (APNSwift's mock, said to follow Apple):
  MissingChannelId -> BadChannelId -> MissingPushType -> InvalidPushType -> BadExpirationDate -> BadPriority ->
  ChannelNotRegistered -> PayloadEmpty -> 413 PayloadTooLarge (> 5120 bytes) -> BadRequestPayload.
Both: the provider token is checked exactly as on `/3/device` (same connection binding, same refresh floor);
a bundle id outside the mock's topics answers `403 TopicMismatch`; `enabled = False` answers `400
FeatureNotEnabled` (the capability is off).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from apns_rules import (OK, Checked, ConnectionAuth, KeyRing, KeyTokenFloor, Request, Verdict, _err,
                        has_duplicate_headers)

MANAGE_PREFIX = "/1/apps/"
SEND_PREFIX = "/4/broadcasts/apps/"
MAX_BROADCAST_PAYLOAD = 5120
# Apple: at most 10,000 channels per app per environment.
CHANNEL_CAP = 10_000
# Apple says not to assume a channel id size; the mock bounds what it parses.
MAX_CHANNEL_ID = 256
_BUNDLE = re.compile(r"[A-Za-z0-9.\-]{1,155}")
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_DIGITS = re.compile(r"[0-9]+")
SINGLE_HEADERS = frozenset(["authorization", "apns-channel-id", "apns-push-type", "apns-priority", "apns-expiration",
                            "apns-request-id"])
BEHAVIOUR_PREFIX = "broadcast:"


def handles(path: str) -> bool:
    """Whether `path` belongs to the broadcast APIs."""
    return path.startswith(MANAGE_PREFIX) or path.startswith(SEND_PREFIX)


def valid_channel_id(text: str) -> bool:
    """Standard base64 with correct padding, at most MAX_CHANNEL_ID characters, decodable."""
    if not text or len(text) > MAX_CHANNEL_ID or len(text) % 4 != 0 or not _B64.fullmatch(text):
        return False
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def new_channel_id() -> str:
    """A fresh id. The first bytes make it start with `+/` and 16 bytes end it with `==`, so every id carries the
    characters that need care in a URL path."""
    return base64.b64encode(b"\xfb\xff" + os.urandom(14)).decode()


@dataclass
class BroadcastChecked(Checked):
    """`Checked` plus what a broadcast answer carries besides the verdict."""

    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytes | None = None
    channel: str | None = None
    kind: str = ""  # create | read | delete | list | broadcast


@dataclass
class BroadcastConfig:
    """`PUT /broadcast/config`: `enabled` (False: FeatureNotEnabled), `channel_cap`."""

    enabled: bool = True
    channel_cap: int = CHANNEL_CAP

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class BroadcastState:
    """Channels per (bundle, environment) and the broadcasts accepted, for the control API."""

    RECORDED = 10_000

    def __init__(self) -> None:
        self.config = BroadcastConfig()
        self.channels: dict[tuple[str, str], dict[str, int]] = {}
        self.broadcasts: list[dict[str, Any]] = []
        self.seq = 0

    def apply_config(self, body: dict[str, Any]) -> None:
        unknown = set(body) - set(BroadcastConfig().__dict__)
        if unknown:
            raise ValueError(f"unknown broadcast config fields: {sorted(unknown)}")
        # Every value is checked before any is set: a refused change changes nothing.
        if "enabled" in body and not isinstance(body["enabled"], bool):
            raise ValueError("enabled must be true or false")
        cap = int(body["channel_cap"]) if "channel_cap" in body else self.config.channel_cap
        if cap < 0:
            raise ValueError("channel_cap must be >= 0")
        self.config.enabled = body.get("enabled", self.config.enabled)
        self.config.channel_cap = cap

    def reset(self) -> None:
        """Forgets channels, recorded broadcasts and the config (the control API's `POST /reset`)."""
        self.config = BroadcastConfig()
        self.channels.clear()
        self.broadcasts.clear()

    def channel_list(self) -> list[dict[str, Any]]:
        return [{"bundle": bundle, "environment": env, "channel": cid, "message_storage_policy": policy}
                for (bundle, env), store in self.channels.items() for cid, policy in store.items()]

    def record(self, checked: BroadcastChecked, req: Request, time_s: float) -> None:
        """Keeps an accepted broadcast for `GET /broadcasts`."""
        self.seq += 1
        self.broadcasts.append({
            "seq": self.seq, "time": time_s, "channel": checked.channel, "path": req.path,
            "headers": {k: v for k, v in req.headers if k != "authorization"}, "payload": checked.payload,
        })
        del self.broadcasts[: -self.RECORDED]

    # MARK: rules

    def check(self, req: Request, keys: KeyRing, auth: ConnectionAuth, topics: frozenset[str], environment: str,
              now: float, floor: KeyTokenFloor | None = None) -> BroadcastChecked:
        """Applies the rules (module docstring) and, for an accepted create or delete, changes the store."""
        out = BroadcastChecked(OK)
        is_send = req.path.startswith(SEND_PREFIX)
        rest = req.path[len(SEND_PREFIX if is_send else MANAGE_PREFIX):]
        if "?" in rest or "#" in rest:
            out.verdict = _err(404, "BadPath")
            return out
        if is_send:
            bundle, kind = rest, "broadcast"
            if "/" in bundle:
                out.verdict = _err(404, "BadPath")
                return out
            if req.method != "POST":
                out.verdict = _err(405, "MethodNotAllowed")
                return out
        else:
            bundle, _, tail = rest.partition("/")
            methods = {"channels": {"POST": "create", "GET": "read", "DELETE": "delete"},
                       "all-channels": {"GET": "list"}}.get(tail)
            if methods is None:
                out.verdict = _err(404, "BadPath")
                return out
            if req.method not in methods:
                out.verdict = _err(405, "MethodNotAllowed")
                return out
            kind = methods[req.method]
        out.kind = kind
        if not _BUNDLE.fullmatch(bundle):
            out.verdict = _err(404, "BadPath")
            return out

        if has_duplicate_headers(req, SINGLE_HEADERS):
            out.verdict = _err(400, "DuplicateHeaders")
            return out
        verdict = _authenticate(req, keys, auth, now, floor, out)
        if not verdict.ok:
            out.verdict = verdict
            return out
        if bundle not in topics:
            out.verdict = _err(403, "TopicMismatch")
            return out
        if not self.config.enabled:
            out.verdict = _err(400, "FeatureNotEnabled")
            return out
        request_id = req.header("apns-request-id")
        if request_id is not None and not _UUID.fullmatch(request_id):
            out.verdict = _err(400, "BadRequestParams")
            return out
        out.response_headers.append(("apns-request-id", request_id or str(uuid.uuid4())))
        store = self.channels.setdefault((bundle, environment), {})
        if kind == "broadcast":
            out.verdict = _send_verdict(req, store, out)
        else:
            self._check_manage(req, kind, store, out)
        return out

    def _check_manage(self, req: Request, kind: str, store: dict[str, int], out: BroadcastChecked) -> None:
        if kind == "list":
            out.verdict = Verdict(200)
            out.response_body = json.dumps({"channels": list(store)}).encode()
            return
        if kind == "create":
            try:
                body = json.loads(req.body) if req.body else None
            except (ValueError, UnicodeDecodeError):
                body = None
            if (not isinstance(body, dict) or set(body) != {"message-storage-policy", "push-type"}
                    or body["message-storage-policy"] not in (0, 1) or isinstance(body["message-storage-policy"], bool)
                    or body["push-type"] != "LiveActivity"):
                out.verdict = _err(400, "BadRequestParams")
                return
            if len(store) >= self.config.channel_cap:
                out.verdict = _err(400, "CannotCreateChannelConfig")
                return
            channel = new_channel_id()
            store[channel] = body["message-storage-policy"]
            out.channel = channel
            out.response_headers.append(("apns-channel-id", channel))
            out.verdict = Verdict(201)
            return
        rejected = _read_channel_id(req, out)
        if rejected is not None:
            out.verdict = rejected
            return
        channel = out.channel
        if channel not in store:
            out.verdict = _err(400, "ChannelNotRegistered")
            return
        out.response_headers.append(("apns-channel-id", channel))
        if kind == "read":
            out.verdict = Verdict(200)
            out.response_body = json.dumps({"message-storage-policy": store[channel], "push-type": "LiveActivity"}).encode()
        else:
            del store[channel]
            out.verdict = Verdict(204)


def _send_verdict(req: Request, store: dict[str, int], out: BroadcastChecked) -> Verdict:
    """The send rules after authentication, in the module docstring's order (first failure answers)."""
    # The mock's choice: Apple's send has no topic, so a client that sends one built the wrong request.
    if req.header("apns-topic") is not None:
        return _err(400, "BadRequestParams")
    rejected = _read_channel_id(req, out)
    if out.channel is not None:
        out.token = BEHAVIOUR_PREFIX + out.channel
    if rejected is not None:
        return rejected
    channel = out.channel
    push_type = req.header("apns-push-type")
    if push_type is None or push_type == "":
        return _err(400, "MissingPushType")
    out.push_type = push_type
    # Apple's tables write "Liveactivity", its samples "liveactivity": the case is not significant.
    if push_type.lower() != "liveactivity":
        return _err(400, "InvalidPushType")
    expiration = req.header("apns-expiration")
    if expiration is not None and not _DIGITS.fullmatch(expiration):
        return _err(400, "BadExpirationDate")
    # Apple: a nonzero expiration on a No Message Stored (policy 0) channel is rejected.
    if expiration is not None and int(expiration) != 0 and store.get(channel) == 0:
        return _err(400, "BadExpirationDate")
    priority = req.header("apns-priority")
    if priority is not None and priority not in ("1", "5", "10"):
        return _err(400, "BadPriority")
    if channel not in store:
        return _err(400, "ChannelNotRegistered")
    size = req.body_size if req.body_size >= 0 else len(req.body)
    if size == 0:
        return _err(400, "PayloadEmpty")
    if size > MAX_BROADCAST_PAYLOAD:
        return _err(413, "PayloadTooLarge")
    try:
        payload = json.loads(req.body)
    except (ValueError, UnicodeDecodeError):
        payload = None
    out.payload = payload
    aps = payload.get("aps") if isinstance(payload, dict) else None
    # A broadcast updates or ends activities; it cannot start one, and ActivityKit needs a timestamp.
    if (not isinstance(aps, dict) or aps.get("event") not in ("update", "end")
            or not isinstance(aps.get("timestamp"), int) or isinstance(aps.get("timestamp"), bool)
            or ("content-state" in aps and not isinstance(aps["content-state"], dict))
            or (aps.get("event") == "update" and "content-state" not in aps)):
        return _err(400, "BadRequestPayload")
    return OK


def _read_channel_id(req: Request, out: BroadcastChecked) -> Verdict | None:
    """The `apns-channel-id` rules of read, delete and send: present (else MissingChannelId) and well-formed (else
    BadChannelId). Sets `out.channel` once present, so a refused request is still recorded with its channel."""
    channel = req.header("apns-channel-id")
    if channel is None or channel == "":
        return _err(400, "MissingChannelId")
    out.channel = channel
    return None if valid_channel_id(channel) else _err(400, "BadChannelId")


def _authenticate(req: Request, keys: KeyRing, auth: ConnectionAuth, now: float, floor: KeyTokenFloor | None,
                  out: Checked) -> Verdict:
    """The provider token rules of `/3/device` (apns_rules.check_request) for the broadcast paths."""
    authorization = req.header("authorization")
    if authorization is None or not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
        return _err(403, "MissingProviderToken")
    jwt = authorization[7:].strip()
    verified = keys.verify(jwt)
    if isinstance(verified, Verdict):
        return verified
    out.jwt = verified
    return auth.admit(jwt, verified, now, floor)
