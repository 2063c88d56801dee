"""Web Push request rules as pure, socket-free functions (used by mock_push_service.py and webpush_decrypt.py,
tested in test_mock_push_service.py).

Independent of the Swift code: VAPID (RFC 8292) is checked with `cryptography`, and bodies are decrypted with
`http_ece` (the reference implementation of RFC 8188/8291 by the web-push-libs project). Nothing here does I/O
or reads a clock it is not handed.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

# RFC 8292 §2: `exp` no more than 24 hours after the request.
VAPID_MAX_LIFETIME_S = 24 * 60 * 60
# RFC 8291 §4: a push service must accept bodies up to 4096 bytes; the mock refuses anything larger with 413.
MAX_BODY = 4096
# salt(16) + rs(4) + idlen(1) + keyid(65)
HEADER_SIZE = 86
MAX_TTL = 2_419_200
URGENCIES = ("very-low", "low", "normal", "high")
TOPIC_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")


class Rejection(Exception):
    """A request the push service refuses: the HTTP status and a short reason (the mock's body)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Strict base64url without padding (JOSE)."""
    if not B64URL_RE.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def public_key_from_point(point: bytes) -> ec.EllipticCurvePublicKey:
    """A P-256 key from a 65-byte uncompressed point (raises ValueError off the curve)."""
    if len(point) != 65 or point[0] != 4:
        raise ValueError("not a 65-byte uncompressed point")
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)


def point_of(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


# MARK: - VAPID (RFC 8292)


@dataclass
class Vapid:
    claims: dict[str, Any]
    public_key: str  # `k`, base64url


def parse_vapid_header(value: str | None) -> tuple[str, str]:
    """`vapid t=<jwt>, k=<key>` (RFC 8292 §3; parameters in any order, optional spaces) → (t, k). 401 when absent
    or unreadable, as push services answer a missing authorization."""
    if not value:
        raise Rejection(401, "missing Authorization")
    scheme, _, rest = value.partition(" ")
    if scheme.lower() != "vapid":
        raise Rejection(401, "Authorization scheme is not vapid")
    params: dict[str, str] = {}
    for part in rest.split(","):
        name, sep, val = part.strip().partition("=")
        if not sep or name in params:
            raise Rejection(401, "malformed vapid parameters")
        params[name] = val
    if set(params) != {"t", "k"}:
        raise Rejection(401, "vapid needs exactly t and k")
    return params["t"], params["k"]


def verify_vapid(header: str | None, audience: str, now: int, expected_key: str | None = None) -> Vapid:
    """Checks the VAPID header for a request to `audience` at `now` (UNIX seconds): ES256 signature by `k`,
    `typ`/`alg`, `aud` = the push service's origin, integer `exp` in the future and at most 24 h ahead, `sub` a
    `mailto:` or `https:` contact, and `k` = the subscription's `applicationServerKey` when one was given.
    Raises Rejection(403) for a token that is present but wrong, as push services do."""
    token, k = parse_vapid_header(header)
    try:
        key = public_key_from_point(b64url_decode(k))
    except ValueError:
        raise Rejection(401, "k is not a base64url P-256 point")
    if expected_key is not None and k != expected_key:
        raise Rejection(403, "k is not the subscription's applicationServerKey")
    parts = token.split(".")
    if len(parts) != 3:
        raise Rejection(403, "JWT does not have 3 segments")
    try:
        jwt_header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except ValueError:
        raise Rejection(403, "JWT segment is not base64url JSON")
    if not isinstance(jwt_header, dict) or not isinstance(claims, dict):
        raise Rejection(403, "JWT header or claims are not objects")
    if jwt_header.get("alg") != "ES256" or jwt_header.get("typ", "JWT") != "JWT" or "crit" in jwt_header:
        raise Rejection(403, "JWT header must be typ JWT, alg ES256")
    if len(signature) != 64:
        raise Rejection(403, "ES256 signature must be 64 bytes r||s")
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Rejection(403, "JWT signature does not verify with k")
    if claims.get("aud") != audience:
        raise Rejection(403, f"aud must be {audience}")
    exp = claims.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise Rejection(403, "exp must be an integer")
    if exp <= now:
        raise Rejection(403, "JWT expired")
    if exp - now > VAPID_MAX_LIFETIME_S:
        raise Rejection(403, "exp more than 24 hours ahead")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https:")):
        raise Rejection(403, "sub must be a mailto: or https: contact")
    return Vapid(claims=claims, public_key=k)


# MARK: - RFC 8030 headers


def check_headers(headers: dict[str, str]) -> dict[str, Any]:
    """TTL (required), Content-Encoding aes128gcm, Urgency and Topic when present. Raises Rejection(400)."""
    ttl = headers.get("ttl")
    if ttl is None:
        raise Rejection(400, "missing TTL")
    if not ttl.isdigit() or int(ttl) > MAX_TTL:
        raise Rejection(400, "TTL must be a non-negative integer")
    if headers.get("content-encoding") != "aes128gcm":
        raise Rejection(400, "Content-Encoding must be aes128gcm")
    urgency = headers.get("urgency")
    if urgency is not None and urgency not in URGENCIES:
        raise Rejection(400, "bad Urgency")
    topic = headers.get("topic")
    if topic is not None and not TOPIC_RE.fullmatch(topic):
        raise Rejection(400, "Topic must be 1-32 base64url characters")
    return {"ttl": int(ttl), "urgency": urgency, "topic": topic}


# MARK: - RFC 8291 decryption


def decrypt(body: bytes, private_key: ec.EllipticCurvePrivateKey, auth: bytes) -> bytes:
    """The plaintext of an `aes128gcm` push message, checked the way RFC 8291 §4 constrains it: one record,
    a 65-byte keyid, a body within 4096 bytes (413 otherwise). Raises Rejection(400) for anything that does not
    decrypt, as a browser could not read it."""
    if len(body) > MAX_BODY:
        raise Rejection(413, "body over 4096 bytes")
    if len(body) < HEADER_SIZE + 17:
        raise Rejection(400, "body shorter than an aes128gcm header and one record")
    (rs,) = struct.unpack("!I", body[16:20])
    idlen = body[20]
    if idlen != 65:
        raise Rejection(400, "keyid must be the 65-byte sender key")
    if len(body) - HEADER_SIZE > rs:
        raise Rejection(400, "more than one record")
    try:
        public_key_from_point(body[21:86])
        # With a private key and no `dh`, http_ece takes the sender's key from the keyid.
        return http_ece.decrypt(body, private_key=private_key, auth_secret=auth, version="aes128gcm")
    except (ValueError, http_ece.ECEException, binascii.Error) as e:
        raise Rejection(400, f"undecryptable: {type(e).__name__}")
    except Exception as e:  # cryptography's InvalidTag and friends
        raise Rejection(400, f"undecryptable: {type(e).__name__}")
