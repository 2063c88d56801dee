"""Apple's APNs request rules as pure, socket-free functions (used by mock_apns.py, tested in test_mock_apns.py).

Everything here follows `docs/APNS.md` (Apple's provider API). Where Apple is silent the choice is written
next to the rule and in `Tests/Support/README.md`. Nothing in this module does I/O or reads a clock it is not
handed, so every rule is testable with plain values.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

# Apple: an `iat` more than one hour old is rejected with ExpiredProviderToken.
TOKEN_MAX_AGE_S = 3600
# Apple: a new token more than once every 20 minutes on one connection gives TooManyProviderTokenUpdates.
TOKEN_MIN_REFRESH_S = 20 * 60
# Apple documents no tolerance for an `iat` in the future; the mock accepts one minute of clock skew and
# answers InvalidProviderToken beyond it.
TOKEN_FUTURE_SKEW_S = 60

MAX_PAYLOAD = 4096
MAX_PAYLOAD_VOIP = 5120
MAX_COLLAPSE_ID_BYTES = 64

# Push type -> required topic suffix (Apple's "Know when to use push types" table). `mdm` takes its topic from
# the MDM certificate, so the mock accepts any allowed topic for it.
PUSH_TYPE_SUFFIX: dict[str, str | None] = {
    "alert": "",
    "background": "",
    "complication": ".complication",
    "controls": ".push-type.controls",
    "fileprovider": ".pushkit.fileprovider",
    "liveactivity": ".push-type.liveactivity",
    "location": ".location-query",
    "mdm": None,
    "pushtotalk": ".voip-ptt",
    "voip": ".voip",
    "widgets": ".push-type.widgets",
}

# Headers whose repetition answers DuplicateHeaders. (Pseudo-headers are policed by h2 itself.)
SINGLE_HEADERS = frozenset(
    ["authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration",
     "apns-collapse-id"]
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DIGITS = re.compile(r"[0-9]+")
DEVICE_PATH = "/3/device/"


@dataclass(frozen=True)
class Verdict:
    """The answer for one request: an HTTP status and, for errors, Apple's `reason`."""

    status: int
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200


OK = Verdict(200)


def _err(status: int, reason: str) -> Verdict:
    return Verdict(status, reason)


# MARK: - Provider tokens (JWT)


@dataclass(frozen=True)
class ProviderToken:
    """The parts of a verified provider token the mock records and compares."""

    kid: str
    iss: str
    iat: float


def _b64url_decode(segment: str) -> bytes:
    if not segment or "=" in segment or "+" in segment or "/" in segment:
        raise ValueError("not base64url without padding")
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def load_public_key(pem: bytes) -> ec.EllipticCurvePublicKey:
    """Loads a P-256 public key from a public PEM, or the public half of a private PEM/.p8 file."""
    try:
        key: Any = serialization.load_pem_public_key(pem)
    except ValueError:
        key = serialization.load_pem_private_key(pem, password=None).public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise ValueError("APNs keys are P-256 EC keys")
    return key


@dataclass
class KeyRing:
    """The team's signing keys by key ID, and a cache of tokens already verified (verification costs ~100 µs)."""

    team_id: str
    keys: dict[str, ec.EllipticCurvePublicKey]
    _verified: dict[str, ProviderToken] = field(default_factory=dict)

    def verify(self, jwt: str) -> ProviderToken | Verdict:
        """Checks format, algorithm, key ID, issuer and signature (not the age: that depends on the clock)."""
        cached = self._verified.get(jwt)
        if cached is not None:
            return cached
        invalid = _err(403, "InvalidProviderToken")
        parts = jwt.split(".")
        if len(parts) != 3:
            return invalid
        try:
            header = json.loads(_b64url_decode(parts[0]))
            claims = json.loads(_b64url_decode(parts[1]))
            signature = _b64url_decode(parts[2])
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return invalid
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return invalid
        if header.get("alg") != "ES256":
            return invalid
        kid = header.get("kid")
        key = self.keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            return invalid
        iat = claims.get("iat")
        # bool is an int subclass in Python; `true` is not a number in JSON.
        if claims.get("iss") != self.team_id or isinstance(iat, bool) or not isinstance(iat, (int, float)):
            return invalid
        if len(signature) != 64:  # ES256 in JWS is raw r||s, 32 bytes each, never DER.
            return invalid
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            key.verify(der, f"{parts[0]}.{parts[1]}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, UnicodeEncodeError):
            return invalid
        token = ProviderToken(kid=kid, iss=claims["iss"], iat=float(iat))
        if len(self._verified) > 10_000:  # bounded: tests sign few tokens, but a fuzzing run must not grow it
            self._verified.clear()
        self._verified[jwt] = token
        return token


@dataclass
class ConnectionAuth:
    """What APNs remembers per connection: the key bound on the first push and the current token.

    Apple binds a connection to its team (and key kind) on the first push; the mock simplifies that to the key
    ID: a different `kid` later on the same connection answers 403 UnrelatedKeyIdInToken. A *new* token less
    than 20 minutes (by `iat`) after the current one answers 429 TooManyProviderTokenUpdates and the connection
    keeps its current token.
    """

    bound_kid: str | None = None
    current_jwt: str | None = None
    current_iat: float | None = None
    tokens_seen: int = 0

    @property
    def authenticated(self) -> bool:
        return self.bound_kid is not None

    def admit(self, jwt: str, token: ProviderToken, now: float, floor: "KeyTokenFloor | None" = None) -> Verdict:
        """Checks the clock-dependent and per-connection rules (and, given `floor`, the per-key refresh floor),
        then makes `jwt` the connection's token."""
        if now - token.iat > TOKEN_MAX_AGE_S:
            return _err(403, "ExpiredProviderToken")
        if token.iat - now > TOKEN_FUTURE_SKEW_S:
            return _err(403, "InvalidProviderToken")
        if self.bound_kid is not None and token.kid != self.bound_kid:
            return _err(403, "UnrelatedKeyIdInToken")
        if jwt == self.current_jwt:
            return OK
        if self.current_iat is not None and token.iat - self.current_iat < TOKEN_MIN_REFRESH_S:
            return _err(429, "TooManyProviderTokenUpdates")
        if floor is not None and not floor.admit(jwt, token):
            return _err(429, "TooManyProviderTokenUpdates")
        self.bound_kid = token.kid
        self.current_jwt = jwt
        self.current_iat = token.iat
        self.tokens_seen += 1
        return OK


@dataclass
class KeyTokenFloor:
    """The 20-minute refresh floor per signing key across every connection (config `token_floor_scope: key`).

    Apple documents the floor per connection; APNs has been observed to enforce it per key, so a provider that
    signs a new token on every restart (or on every node) is refused. Per key ID the mock remembers the newest
    accepted token's `iat` and the tokens it accepted: a token accepted before stays valid (other connections
    or nodes may still use it until it expires), and a token never seen whose `iat` is less than 1200 s after the
    newest accepted one answers 429 TooManyProviderTokenUpdates. The state lives as long as the mock process,
    across connections and client restarts; `POST /reset` keeps it, like connection state.
    """

    newest_iat: dict[str, float] = field(default_factory=dict)
    accepted: dict[str, list[str]] = field(default_factory=dict)
    # Tokens remembered per key: enough for every node of a test to keep its previous token; a bound so a
    # long run cannot grow it.
    REMEMBERED = 16

    def admit(self, jwt: str, token: ProviderToken) -> bool:
        """Whether `jwt` may be used now; records it as accepted when it may."""
        known = self.accepted.setdefault(token.kid, [])
        if jwt in known:
            return True
        newest = self.newest_iat.get(token.kid)
        if newest is not None and token.iat - newest < TOKEN_MIN_REFRESH_S:
            return False
        self.newest_iat[token.kid] = token.iat
        known.append(jwt)
        del known[: -self.REMEMBERED]
        return True


# MARK: - Request validation


@dataclass
class Request:
    """One complete HTTP/2 request as the mock saw it (header names lower-case, values latin-1 decoded)."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    body_size: int = -1  # bytes received; `body` may be truncated when a client sends far too much

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


@dataclass
class Policy:
    """The account the mock pretends to be: allowed topics and strictness switches."""

    topics: frozenset[str]
    # Apple only *recommends* apns-push-type outside watchOS; the mock requires it by default (400
    # InvalidPushType when absent) because the provider must always send it. `False` defaults it to alert.
    require_push_type: bool = True
    # The environment the mock plays (`--environment`): a client certificate must be marked for it.
    environment: str = "sandbox"


@dataclass
class Checked:
    """The outcome of `check_request`: the verdict plus what was parsed along the way (for the request log)."""

    verdict: Verdict
    token: str | None = None
    jwt: ProviderToken | None = None
    payload: Any = None
    push_type: str | None = None


def check_path(method: str, path: str) -> tuple[Verdict, str | None]:
    """Method, path shape and device token (hex, even length; any length, as Apple asks)."""
    if method != "POST":
        return _err(405, "MethodNotAllowed"), None
    if not path.startswith(DEVICE_PATH):
        return _err(404, "BadPath"), None
    token = path[len(DEVICE_PATH):]
    if "/" in token or "?" in token or "#" in token:
        return _err(404, "BadPath"), None
    if token == "":
        return _err(400, "MissingDeviceToken"), None
    if len(token) % 2 != 0 or not _HEX.fullmatch(token):
        return _err(400, "BadDeviceToken"), token
    return OK, token


def has_duplicate_headers(req: Request, single: frozenset[str] = SINGLE_HEADERS) -> bool:
    """Whether a header APNs takes once (`single`: the device path's by default) came twice: `400 DuplicateHeaders`."""
    seen: set[str] = set()
    for name, _ in req.headers:
        if name in single:
            if name in seen:
                return True
            seen.add(name)
    return False


def check_request(req: Request, keys: KeyRing, auth: ConnectionAuth, policy: Policy, now: float,
                  floor: KeyTokenFloor | None = None, certificate: Any = None) -> Checked:
    """Applies Apple's rules in Apple's order where known; see README.md for the order where Apple is silent.

    Order: method, path, device token, duplicate headers, certificate environment or provider token (presence,
    format/signature, age, key binding, refresh rate), topic presence, push type value, topic for the push type, priority, apns-id,
    expiration, collapse id, payload (empty, size, JSON object), push type vs payload, background priority.

    `certificate` (an `apns_cert_rules.ClientCertificate`): the connection authenticated with a client
    certificate; the provider token steps are skipped and the certificate decides topics and push types.
    """
    verdict, token = check_path(req.method, req.path)
    out = Checked(verdict, token=token)
    if not verdict.ok:
        return out

    if has_duplicate_headers(req):
        out.verdict = _err(400, "DuplicateHeaders")
        return out

    authorization = req.header("authorization")
    if certificate is not None:
        # Trust came with the TLS handshake; an authorization header is ignored. The markers must fit the host.
        refused = certificate.check_environment(policy.environment)
        if not refused.ok:
            out.verdict = refused
            return out
    elif authorization is None or not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
        out.verdict = _err(403, "MissingProviderToken")
        return out
    else:
        jwt = authorization[7:].strip()
        verified = keys.verify(jwt)
        if isinstance(verified, Verdict):
            out.verdict = verified
            return out
        out.jwt = verified
        admitted = auth.admit(jwt, verified, now, floor)
        if not admitted.ok:
            out.verdict = admitted
            return out

    topic = req.header("apns-topic")
    if (topic is None or topic == "") and certificate is not None:
        topic = certificate.default_topic()
    if topic is None or topic == "":
        out.verdict = _err(400, "MissingTopic")
        return out
    push_type = req.header("apns-push-type")
    if push_type is None and not policy.require_push_type:
        push_type = "alert"
    if push_type not in PUSH_TYPE_SUFFIX:
        out.verdict = _err(400, "InvalidPushType")
        return out
    if certificate is not None and not (refused := certificate.check_push_type(push_type)).ok:
        out.verdict = refused  # token-only push types (apns_cert_rules.TOKEN_ONLY_PUSH_TYPES)
        return out
    out.push_type = push_type
    topic_verdict = (certificate.check_topic(topic, push_type) if certificate is not None
                     else check_topic(topic, push_type, policy.topics))
    if not topic_verdict.ok:
        out.verdict = topic_verdict
        return out

    priority_text = req.header("apns-priority")
    if priority_text is not None and priority_text not in ("1", "5", "10"):
        out.verdict = _err(400, "BadPriority")
        return out
    priority = int(priority_text) if priority_text is not None else 10  # Apple: omitted means 10
    apns_id = req.header("apns-id")
    if apns_id is not None and not _UUID.fullmatch(apns_id):
        out.verdict = _err(400, "BadMessageId")
        return out
    expiration = req.header("apns-expiration")
    if expiration is not None and not _DIGITS.fullmatch(expiration):
        out.verdict = _err(400, "BadExpirationDate")
        return out
    collapse_id = req.header("apns-collapse-id")
    if collapse_id is not None and len(collapse_id.encode("latin-1")) > MAX_COLLAPSE_ID_BYTES:
        out.verdict = _err(400, "BadCollapseId")
        return out

    size = req.body_size if req.body_size >= 0 else len(req.body)
    if size == 0:
        out.verdict = _err(400, "PayloadEmpty")
        return out
    if size > (MAX_PAYLOAD_VOIP if push_type == "voip" else MAX_PAYLOAD):
        out.verdict = _err(413, "PayloadTooLarge")
        return out
    try:
        payload = json.loads(req.body)
    except (ValueError, UnicodeDecodeError):
        payload = None
    if not isinstance(payload, dict):
        # Apple documents no reason for a body that is not a JSON object; the mock answers 400 BadPayload, a
        # reason outside Apple's list, so a client must cope with unknown reasons (Apple adds new ones).
        out.verdict = _err(400, "BadPayload")
        return out
    out.payload = payload
    out.verdict = check_push_type_payload(push_type, priority, payload)
    return out


def check_topic(topic: str, push_type: str, topics: frozenset[str]) -> Verdict:
    """The topic must be an allowed bundle ID plus the push type's suffix.

    Apple does not document which reason a wrong topic gets. The mock answers 400 BadTopic when the topic is no
    allowed bundle ID with any push-type suffix, and 400 DeviceTokenNotForTopic when it is a known bundle ID
    whose suffix belongs to another push type (e.g. `voip` sent to `com.example.app`).
    """
    suffix = PUSH_TYPE_SUFFIX[push_type]
    if suffix is None:  # mdm: any allowed topic
        return OK if topic in topics else _err(400, "BadTopic")
    if topic.endswith(suffix) and topic[: len(topic) - len(suffix)] in topics:
        return OK
    for other in PUSH_TYPE_SUFFIX.values():
        if other is not None and topic.endswith(other) and topic[: len(topic) - len(other)] in topics:
            return _err(400, "DeviceTokenNotForTopic")
    return _err(400, "BadTopic")


def check_push_type_payload(push_type: str, priority: int, payload: dict[str, Any]) -> Verdict:
    """Push type vs payload, as far as Apple states it ("must accurately reflect the contents of your payload").

    - `alert`: `aps` must hold `alert`, `sound` or `badge` (else 400 InvalidPushType).
    - `background`: `aps.content-available` must be 1 and `aps` must hold no alert/sound/badge (else 400
      InvalidPushType); priority must not be 10, and an omitted priority means 10 (400 BadPriority).
    - `liveactivity`: see `check_live_activity_payload`.
    - other push types: any JSON object.
    """
    aps = payload.get("aps")
    aps = aps if isinstance(aps, dict) else {}
    visible = any(k in aps for k in ("alert", "sound", "badge"))
    if push_type == "alert" and not visible:
        return _err(400, "InvalidPushType")
    if push_type == "background":
        if visible or aps.get("content-available") != 1 or isinstance(aps.get("content-available"), bool):
            return _err(400, "InvalidPushType")
        if priority == 10:
            return _err(400, "BadPriority")
    if push_type == "liveactivity":
        return check_live_activity_payload(priority, aps)
    return OK


LIVE_ACTIVITY_EVENTS = ("start", "update", "end")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_live_activity_payload(priority: int, aps: dict[str, Any]) -> Verdict:
    """ActivityKit's payload rules (Apple's "Starting and updating Live Activities with ActivityKit push
    notifications"). Apple answers many violations with 200 and the device drops the push; the strict mock refuses
    them so a server bug shows in tests. The topic suffix (`.push-type.liveactivity`) and the 4096-byte limit are
    checked before this, as for every push type.

    - priority 5 or 10 only (an explicit 1 or the omitted default 10 is fine for 10): else 400 BadPriority.
    - `aps.event` one of start, update, end; `aps.timestamp` an integer (epoch seconds): else 400 BadPayload.
    - `content-state` a JSON object, required for start and update: else 400 BadPayload.
    - start: `attributes-type` (string), `attributes` (object) and `alert` are required: else 400 BadPayload.
    - `dismissal-date` only with `end`, and an integer; `stale-date` an integer: else 400 BadPayload.
    """
    if priority not in (5, 10):
        return _err(400, "BadPriority")
    event = aps.get("event")
    if event not in LIVE_ACTIVITY_EVENTS:
        return _err(400, "BadPayload")
    if not _is_int(aps.get("timestamp")):
        return _err(400, "BadPayload")
    state = aps.get("content-state")
    if (state is None and event != "end") or (state is not None and not isinstance(state, dict)):
        return _err(400, "BadPayload")
    if event == "start":
        if not isinstance(aps.get("attributes-type"), str) or not isinstance(aps.get("attributes"), dict):
            return _err(400, "BadPayload")
        if "alert" not in aps:
            return _err(400, "BadPayload")
    if "dismissal-date" in aps and (event != "end" or not _is_int(aps["dismissal-date"])):
        return _err(400, "BadPayload")
    if "stale-date" in aps and not _is_int(aps["stale-date"]):
        return _err(400, "BadPayload")
    return OK
