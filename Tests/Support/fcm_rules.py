"""The request rules of the strict mock FCM, as pure functions (no sockets), so they can be tested directly.

Sources: Google's "Using OAuth 2.0 for Server to Server Applications" (the JWT-bearer grant), the FCM HTTP v1
reference (`projects.messages`, `ErrorCode`) and docs/ in this repository. Answers use Google's body shapes:
the token endpoint's `{"error","error_description"}` and FCM's `google.rpc.Status` with an `FcmError` detail.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPES = ("https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform")
MAX_ASSERTION_LIFETIME = 3600
CLOCK_SKEW = 60
MAX_MESSAGE_BYTES = 4096
MAX_TTL_S = 2_419_200
FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
SEND_PATH = re.compile(r"/v1/projects/([^/]+)/messages:send")
TTL = re.compile(r"\d+(\.\d{1,9})?s")
COLOR = re.compile(r"#[0-9a-fA-F]{6}")


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: tuple[tuple[str, str], ...] = ()
    error_code: str | None = None  # the FcmError code or token-endpoint `error`, for the request log

    @property
    def ok(self) -> bool:
        return self.status == 200


def oauth_error(error: str, description: str, status: int = 400) -> Answer:
    return Answer(status, {"error": error, "error_description": description}, error_code=error)


def fcm_error(status: int, canonical: str, message: str, code: str | None = None,
              violations: list[tuple[str, str]] | None = None, retry_after: int | None = None) -> Answer:
    """FCM's error body: `{"error":{"code","message","status","details":[FcmError?, BadRequest?]}}`."""
    details: list[dict[str, Any]] = []
    if code is not None:
        details.append({"@type": FCM_ERROR, "errorCode": code})
    if violations:
        details.append({"@type": BAD_REQUEST,
                        "fieldViolations": [{"field": f, "description": d} for f, d in violations]})
    body = {"error": {"code": status, "message": message, "status": canonical, "details": details}}
    headers = (("retry-after", str(retry_after)),) if retry_after is not None else ()
    return Answer(status, body, headers, code or canonical)


# MARK: - Service accounts and the token endpoint


@dataclass(frozen=True)
class Account:
    """What the mock knows of a service account: the public half of its key and its identity."""

    client_email: str
    private_key_id: str
    project_id: str
    public_key: rsa.RSAPublicKey


def load_service_account(data: bytes) -> Account:
    """Reads a service-account JSON file (the mock keeps only the public half of `private_key`)."""
    info = json.loads(data)
    if info.get("type") != "service_account":
        raise ValueError("not a service_account file")
    key = serialization.load_pem_private_key(info["private_key"].encode(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("private_key is not an RSA key")
    return Account(info["client_email"], info["private_key_id"], info["project_id"], key.public_key())


def _b64url(segment: str) -> bytes:
    if not segment or "=" in segment or "+" in segment or "/" in segment:
        raise ValueError("not base64url without padding")
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def check_assertion_request(content_type: str | None, body: bytes, accounts: dict[str, Account], token_uri: str,
                            now: float) -> Account | Answer:
    """The JWT-bearer grant: form body, exact grant type, RS256 assertion signed by a known account's key, `iss`,
    `aud` = this endpoint, `scope` with firebase.messaging, integer `iat` within ±60 s, `exp − iat` ≤ 3600."""
    if (content_type or "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return oauth_error("invalid_request", "Bad Request: Content-Type must be application/x-www-form-urlencoded")
    try:
        form = urllib.parse.parse_qs(body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
    except (ValueError, UnicodeDecodeError):
        return oauth_error("invalid_request", "Bad Request: malformed form body")
    if any(len(v) != 1 for v in form.values()):
        return oauth_error("invalid_request", "Bad Request: repeated parameter")
    if form.get("grant_type", [""])[0] != GRANT_TYPE:
        return oauth_error("unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type', [''])[0]}")
    assertion = form.get("assertion", [""])[0]
    parts = assertion.split(".")
    if len(parts) != 3:
        return oauth_error("invalid_grant", "Invalid JWT: wrong number of segments")
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return oauth_error("invalid_grant", "Invalid JWT: cannot decode")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return oauth_error("invalid_grant", "Invalid JWT: header and claims must be objects")
    if header.get("alg") != "RS256":
        return oauth_error("invalid_grant", "Invalid JWT: alg must be RS256")
    account = accounts.get(header.get("kid")) if isinstance(header.get("kid"), str) else None
    if account is None:
        return oauth_error("invalid_grant", "Invalid JWT Signature.")  # Google's words for an unknown/deleted key
    try:
        account.public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return oauth_error("invalid_grant", "Invalid JWT Signature.")
    if claims.get("iss") != account.client_email:
        return oauth_error("invalid_grant", "Invalid JWT: iss does not match the key's service account")
    if claims.get("aud") != token_uri:
        return oauth_error("invalid_grant", f"Invalid JWT: aud must be {token_uri}")
    scope = claims.get("scope")
    if not isinstance(scope, str) or not any(s in SCOPES for s in scope.split(" ")):
        return oauth_error("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
    iat, exp = claims.get("iat"), claims.get("exp")
    if type(iat) is not int or type(exp) is not int:  # noqa: E721  (bool is an int subclass: exclude it)
        return oauth_error("invalid_grant", "Invalid JWT: iat and exp must be integers")
    if abs(iat - now) > CLOCK_SKEW or exp <= now or exp <= iat or exp - iat > MAX_ASSERTION_LIFETIME:
        return oauth_error("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                                            "reasonable timeframe. Check your iat and exp values in the JWT claim.")
    return account


@dataclass
class IssuedToken:
    account: Account
    expires_at: float


@dataclass
class TokenStore:
    """Opaque access tokens the mock issued, and when each expires."""

    tokens: dict[str, IssuedToken] = field(default_factory=dict)

    def issue(self, account: Account, now: float, lifetime_s: int) -> dict[str, Any]:
        token = "ya29.mock-" + secrets.token_urlsafe(24)
        self.tokens[token] = IssuedToken(account, now + lifetime_s)
        return {"access_token": token, "expires_in": lifetime_s, "token_type": "Bearer"}

    def check(self, authorization: str | None, now: float) -> Account | None:
        """The account behind a live `Bearer` token, or None (missing, unknown or expired)."""
        if not authorization or not authorization.startswith("Bearer "):
            return None
        issued = self.tokens.get(authorization[len("Bearer "):])
        if issued is None or now >= issued.expires_at:
            return None
        return issued.account

    def expire_all(self) -> int:
        for issued in self.tokens.values():
            issued.expires_at = 0
        return len(self.tokens)


UNAUTHENTICATED = fcm_error(
    401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential.")


# MARK: - messages:send


_MESSAGE_FIELDS = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic",
                   "condition"}
_NOTIFICATION_FIELDS = {"title", "body", "image"}
_ANDROID_FIELDS = {"collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification",
                   "fcm_options", "direct_boot_ok"}
_ANDROID_NOTIFICATION_STRINGS = {"title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key",
                                 "title_loc_key", "channel_id", "ticker", "image", "event_time",
                                 "notification_priority", "visibility"}
_ANDROID_NOTIFICATION_ARRAYS = {"body_loc_args", "title_loc_args"}
_ANDROID_NOTIFICATION_OTHER = {"sticky", "local_only", "default_sound", "default_vibrate_timings",
                               "default_light_settings", "notification_count", "vibrate_timings", "light_settings"}
_TARGETS = ("token", "topic", "condition")


def _invalid(field_path: str, description: str) -> Answer:
    return fcm_error(400, "INVALID_ARGUMENT", f"Invalid value at '{field_path}': {description}",
                     code="INVALID_ARGUMENT", violations=[(field_path, description)])


def _unknown(field_path: str, name: str) -> Answer:
    parent = field_path.rsplit(".", 1)[0] if "." in field_path else ""
    return fcm_error(400, "INVALID_ARGUMENT",
                     f"Invalid JSON payload received. Unknown name \"{name}\" at '{parent}': Cannot find field.",
                     violations=[(parent, f"Invalid JSON payload received. Unknown name \"{name}\" at '{parent}': "
                                          "Cannot find field.")])


def _check_object(value: Any, path: str, known: set[str]) -> Answer | None:
    if not isinstance(value, dict):
        return _invalid(path, "expected an object")
    for name in value:
        if name not in known:
            return _unknown(f"{path}.{name}", name)
    return None


def _check_strings(value: dict[str, Any], path: str, names: set[str]) -> Answer | None:
    for name in names & set(value):
        if not isinstance(value[name], str):
            return _invalid(f"{path}.{name}", "(TYPE_STRING)")
    return None


def _check_data(data: Any, path: str) -> Answer | None:
    if not isinstance(data, dict):
        return _invalid(path, "expected a map")
    for index, (key, value) in enumerate(data.items()):
        if not isinstance(value, str):
            return _invalid(f"{path}[{index}].value", f"(TYPE_STRING), {json.dumps(value)}")
        if key in ("from", "message_type") or key.lower().startswith(("google", "gcm")):
            return _invalid(f"{path}", f"reserved key \"{key}\"")
    return None


def check_send(body: bytes) -> tuple[dict[str, Any] | None, bool, Answer | None]:
    """Checks a `messages:send` body: exactly `message` (+ `validate_only`), known fields only, exactly one target,
    string data values, no reserved keys, Duration `ttl` ≤ 28 days, priority NORMAL/HIGH, #rrggbb colours, loc args
    arrays of strings, message ≤ 4096 bytes without its target. Returns (message, validate_only, error)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, False, fcm_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
    if not isinstance(parsed, dict):
        return None, False, fcm_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Expected an object.")
    for name in parsed:
        if name not in ("message", "validate_only"):
            return None, False, _unknown(name, name)
    validate_only = parsed.get("validate_only", False)
    if not isinstance(validate_only, bool):
        return None, False, _invalid("validate_only", "(TYPE_BOOL)")
    message = parsed.get("message")
    if message is None:
        return None, False, _invalid("message", "a message is required")
    error = _check_object(message, "message", _MESSAGE_FIELDS)
    if error:
        return message, validate_only, error
    targets = [t for t in _TARGETS if t in message]
    if len(targets) != 1:
        return message, validate_only, _invalid("message", f"exactly one of token, topic or condition, got {targets}")
    if not isinstance(message[targets[0]], str) or not message[targets[0]]:
        return message, validate_only, _invalid(f"message.{targets[0]}", "(TYPE_STRING)")
    if "data" in message and (error := _check_data(message["data"], "message.data")):
        return message, validate_only, error
    if "notification" in message:
        n = message["notification"]
        if (error := _check_object(n, "message.notification", _NOTIFICATION_FIELDS)) or \
                (error := _check_strings(n, "message.notification", _NOTIFICATION_FIELDS)):
            return message, validate_only, error
    if "android" in message and (error := _check_android(message["android"])):
        return message, validate_only, error
    without_target = {k: v for k, v in message.items() if k not in _TARGETS}
    size = len(json.dumps(without_target, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_MESSAGE_BYTES:
        return message, validate_only, fcm_error(400, "INVALID_ARGUMENT", "Message is too big",
                                                 code="INVALID_ARGUMENT", violations=[("message", "Message is too big")])
    return message, validate_only, None


def _check_android(android: Any) -> Answer | None:
    path = "message.android"
    if error := _check_object(android, path, _ANDROID_FIELDS):
        return error
    if error := _check_strings(android, path, {"collapse_key", "priority", "ttl", "restricted_package_name"}):
        return error
    if "priority" in android and android["priority"].upper() not in ("NORMAL", "HIGH"):
        return _invalid(f"{path}.priority", f"(TYPE_ENUM), \"{android['priority']}\"")
    if "ttl" in android:
        ttl = android["ttl"]
        if not TTL.fullmatch(ttl) or float(ttl[:-1]) > MAX_TTL_S:
            return _invalid(f"{path}.ttl", f"Illegal duration format or value out of range: {ttl}")
    if "data" in android and (error := _check_data(android["data"], f"{path}.data")):
        return error
    if "notification" in android:
        n, npath = android["notification"], f"{path}.notification"
        known = _ANDROID_NOTIFICATION_STRINGS | _ANDROID_NOTIFICATION_ARRAYS | _ANDROID_NOTIFICATION_OTHER
        if (error := _check_object(n, npath, known)) or (error := _check_strings(n, npath, _ANDROID_NOTIFICATION_STRINGS)):
            return error
        for name in _ANDROID_NOTIFICATION_ARRAYS & set(n):
            if not isinstance(n[name], list) or not all(isinstance(a, str) for a in n[name]):
                return _invalid(f"{npath}.{name}", "expected an array of strings")
        if "color" in n and not COLOR.fullmatch(n["color"]):
            return _invalid(f"{npath}.color", "must be #rrggbb")
    return None


# MARK: - Scripted answers for marker tokens


MARKERS = ("unregistered-", "mismatch-", "invalid-", "quota-", "unavailable-", "internal-", "thirdparty-",
           "denied-")


def marker_answer(kind: str, retry_after_s: int) -> Answer:
    """FCM's answer for a scripted failure `kind` (a marker prefix without its dash)."""
    if kind == "unregistered":
        return fcm_error(404, "NOT_FOUND", "Requested entity was not found.", code="UNREGISTERED")
    if kind == "mismatch":
        return fcm_error(403, "PERMISSION_DENIED", "SenderId mismatch", code="SENDER_ID_MISMATCH")
    if kind == "invalid":
        return fcm_error(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                         code="INVALID_ARGUMENT")
    if kind == "quota":
        return fcm_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send requests'",
                         code="QUOTA_EXCEEDED", retry_after=retry_after_s)
    if kind == "unavailable":
        return fcm_error(503, "UNAVAILABLE", "The service is currently unavailable.", code="UNAVAILABLE",
                         retry_after=retry_after_s)
    if kind == "internal":
        return fcm_error(500, "INTERNAL", "Internal error encountered.", code="INTERNAL")
    if kind == "thirdparty":
        return fcm_error(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service",
                         code="THIRD_PARTY_AUTH_ERROR")
    if kind == "denied":
        # The service account lacks cloudmessaging.messages.create on the project, or the API is disabled: no
        # FcmError detail, only the canonical status.
        return fcm_error(403, "PERMISSION_DENIED",
                         "Permission 'cloudmessaging.messages.create' denied on resource (or it may not exist).")
    raise ValueError(f"unknown answer kind {kind!r}; one of {[m[:-1] for m in MARKERS]}")


def marker_kind(token: str) -> str | None:
    for marker in MARKERS:
        if token.startswith(marker):
            return marker[:-1]
    return None
