"""Tests of the strict push-service stand-in: every rule over real TLS + HTTP/1.1, plus the pure rules.

The sender here is a small reference Web Push client built from `http_ece` and `cryptography` (independent of the
Swift code), so a rule that is too lax or too strict fails here before it misleads a Swift test.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import time
from dataclasses import dataclass
from typing import Any

import http_ece
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

import webpush_rules
from mock_process import MockProcess, _reset  # noqa: F401  (_reset: an autouse fixture)
from webpush_rules import Rejection, b64url, b64url_decode, point_of

SUBJECT = "mailto:ops@example.com"


def sign_vapid(key: ec.EllipticCurvePrivateKey, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    h = b64url(json.dumps(header or {"typ": "JWT", "alg": "ES256"}).encode())
    c = b64url(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(f"{h}.{c}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{h}.{c}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def encrypt(plaintext: bytes, p256dh: str, auth: str) -> bytes:
    sender = ec.generate_private_key(ec.SECP256R1())
    return http_ece.encrypt(plaintext, salt=os.urandom(16), private_key=sender, dh=b64url_decode(p256dh),
                            auth_secret=b64url_decode(auth), version="aes128gcm")


class Mock(MockProcess):
    """A running mock_push_service.py process and its control API."""

    def __init__(self, args: list[str]) -> None:
        super().__init__("mock_push_service.py", args)
        self.origin: str = self.info["origin"]

    def subscribe(self, **options: Any) -> dict[str, Any]:
        return self.control("POST", "/subscriptions", options)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def reason(self) -> str | None:
        return json.loads(self.body).get("reason") if self.body else None


@pytest.fixture(scope="module")
def mock():
    m = Mock([])
    yield m
    m.stop()


@pytest.fixture(scope="module")
def vapid_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


class Sender:
    """A reference Web Push sender against the mock."""

    def __init__(self, mock: Mock, key: ec.EllipticCurvePrivateKey) -> None:
        self.mock = mock
        self.key = key
        self.k = b64url(point_of(key.public_key()))

    def authorization(self, **overrides: Any) -> str:
        claims = {"aud": self.mock.origin, "exp": int(time.time()) + 12 * 3600, "sub": SUBJECT}
        claims.update(overrides)
        return f"vapid t={sign_vapid(self.key, claims)}, k={self.k}"

    def push(self, sub: dict[str, Any], plaintext: bytes = b'{"notification":{"title":"Hi"}}',
             headers: dict[str, str | None] | None = None, body: bytes | None = None, method: str = "POST",
             path: str | None = None) -> Answer:
        all_headers: dict[str, str | None] = {"TTL": "60", "Content-Encoding": "aes128gcm",
                                              "Content-Type": "application/octet-stream",
                                              "Authorization": self.authorization()}
        all_headers.update(headers or {})
        if body is None:
            body = encrypt(plaintext, sub["p256dh"], sub["auth"])
        ctx = ssl.create_default_context(cafile=self.mock.ca_file)
        conn = http.client.HTTPSConnection("127.0.0.1", self.mock.port, context=ctx, timeout=10)
        conn.request(method, path or sub["endpoint"].removeprefix(self.mock.origin), body=body,
                     headers={k: v for k, v in all_headers.items() if v is not None})
        resp = conn.getresponse()
        answer = Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        conn.close()
        return answer


@pytest.fixture
def sender(mock: Mock, vapid_key: ec.EllipticCurvePrivateKey) -> Sender:
    return Sender(mock, vapid_key)


# MARK: - Accepted pushes


def test_valid_push_is_decrypted_recorded_and_answered_201(mock, sender):
    sub = mock.subscribe()
    assert sub["endpoint"].startswith(mock.origin + "/push/")
    r = sender.push(sub, headers={"Urgency": "high", "Topic": "news"})
    assert r.status == 201, r.body
    assert r.headers["location"].startswith(mock.origin + "/message/") and r.headers["ttl"] == "60"
    [m] = mock.control("GET", f"/messages?subscription={sub['id']}")
    assert m["plaintext"] == '{"notification":{"title":"Hi"}}'
    assert (m["ttl"], m["urgency"], m["topic"]) == (60, "high", "news")
    assert m["vapid"]["claims"]["aud"] == mock.origin and m["vapid"]["k"] == sender.k


def test_accepts_vapid_parameters_without_space_and_the_largest_body(mock, sender):
    sub = mock.subscribe()
    compact = sender.authorization().replace(", k=", ",k=")
    assert sender.push(sub, plaintext=b"x" * 3993, headers={"Authorization": compact}).status == 201
    [m] = mock.control("GET", "/messages")
    assert m["body_size"] == 4096


def test_pinned_application_server_key_accepts_the_matching_k(mock, sender):
    sub = mock.subscribe(application_server_key=sender.k)
    assert sender.push(sub).status == 201


# MARK: - VAPID


def test_missing_or_foreign_authorization_is_401(mock, sender):
    sub = mock.subscribe()
    assert sender.push(sub, headers={"Authorization": None}).status == 401
    assert sender.push(sub, headers={"Authorization": "WebPush " + sender.authorization()[6:]}).status == 401
    assert sender.push(sub, headers={"Authorization": "vapid t=abc"}).status == 401
    assert mock.control("GET", "/messages") == []


def test_signature_by_another_key_is_403(mock, sender):
    sub = mock.subscribe()
    other = ec.generate_private_key(ec.SECP256R1())
    claims = {"aud": mock.origin, "exp": int(time.time()) + 3600, "sub": SUBJECT}
    forged = f"vapid t={sign_vapid(other, claims)}, k={sender.k}"
    r = sender.push(sub, headers={"Authorization": forged})
    assert (r.status, r.reason) == (403, "JWT signature does not verify with k")


@pytest.mark.parametrize("overrides,reason", [
    ({"aud": "https://127.0.0.1"}, "aud must be"),
    ({"aud": "https://fcm.googleapis.com"}, "aud must be"),
    ({"exp": int(time.time()) - 10}, "JWT expired"),
    ({"exp": int(time.time()) + 24 * 3600 + 120}, "exp more than 24 hours ahead"),
    ({"exp": float(int(time.time()) + 60)}, "exp must be an integer"),
    ({"sub": "ops@example.com"}, "sub must be"),
])
def test_wrong_claims_are_403(mock, sender, overrides, reason):
    sub = mock.subscribe()
    r = sender.push(sub, headers={"Authorization": sender.authorization(**overrides)})
    assert r.status == 403 and r.reason.startswith(reason), r.reason
    [req] = mock.control("GET", "/requests")
    assert req["status"] == 403


def test_k_other_than_the_subscriptions_application_server_key_is_403(mock, sender):
    other = b64url(point_of(ec.generate_private_key(ec.SECP256R1()).public_key()))
    sub = mock.subscribe(application_server_key=other)
    r = sender.push(sub)
    assert (r.status, r.reason) == (403, "k is not the subscription's applicationServerKey")


# MARK: - RFC 8030 headers and the body


@pytest.mark.parametrize("headers,reason", [
    ({"TTL": None}, "missing TTL"),
    ({"TTL": "-1"}, "TTL must be"),
    ({"TTL": "1.5"}, "TTL must be"),
    ({"Content-Encoding": "aesgcm"}, "Content-Encoding must be aes128gcm"),
    ({"Content-Encoding": None}, "Content-Encoding must be aes128gcm"),
    ({"Urgency": "urgent"}, "bad Urgency"),
    ({"Topic": "a" * 33}, "Topic must be"),
    ({"Topic": "no spaces"}, "Topic must be"),
])
def test_bad_rfc8030_headers_are_400(mock, sender, headers, reason):
    r = sender.push(mock.subscribe(), headers=headers)
    assert r.status == 400 and r.reason.startswith(reason), r.reason


def test_body_encrypted_for_another_subscription_is_undecryptable(mock, sender):
    sub, other = mock.subscribe(), mock.subscribe()
    r = sender.push(sub, body=encrypt(b"hello", other["p256dh"], other["auth"]))
    assert r.status == 400 and r.reason.startswith("undecryptable"), r.reason
    assert mock.control("GET", "/messages") == []


def test_flipped_byte_and_truncated_body_are_undecryptable(mock, sender):
    sub = mock.subscribe()
    body = bytearray(encrypt(b"hello", sub["p256dh"], sub["auth"]))
    body[-1] ^= 1
    assert sender.push(sub, body=bytes(body)).status == 400
    assert sender.push(sub, body=bytes(body[:90])).status == 400
    assert sender.push(sub, body=b"").status == 400


def test_body_over_4096_bytes_is_413(mock, sender):
    sub = mock.subscribe()
    r = sender.push(sub, plaintext=b"x" * 3994)
    assert (r.status, r.reason) == (413, "body over 4096 bytes")


def test_unknown_subscription_is_404_and_get_is_405(mock, sender):
    sub = mock.subscribe()
    assert sender.push(sub, path="/push/unknown").status == 404
    assert sender.push(sub, method="GET", body=b"").status == 405


# MARK: - Scripted answers


@pytest.mark.parametrize("marker,status", [("gone-404", 404), ("gone-410", 410), ("too-large", 413),
                                            ("rate-limited", 429), ("unavailable", 503), ("no-subscriber-507", 507)])
def test_marker_subscriptions_answer_their_status_after_every_check(mock, sender, marker, status):
    sub = mock.subscribe(marker=marker, retry_after="17")
    r = sender.push(sub)
    assert r.status == status
    if status in (429, 503):
        assert r.headers["retry-after"] == "17"
    [req] = mock.control("GET", "/requests")
    assert req["plaintext"] == '{"notification":{"title":"Hi"}}', "decrypted before the scripted answer"
    assert mock.control("GET", "/messages") == []
    # A broken request to a marker subscription still gets the real error, not the scripted one.
    assert sender.push(sub, headers={"TTL": None}).status == 400


def test_marker_times_answers_the_marker_that_often_then_accepts_and_retry_after_null_sends_none(mock, sender):
    sub = mock.subscribe(marker="rate-limited", retry_after=None, marker_times=1)
    r = sender.push(sub)
    assert r.status == 429 and "retry-after" not in r.headers
    assert sender.push(sub).status == 201
    assert len(mock.control("GET", "/messages")) == 1


# MARK: - UnifiedPush push servers


@pytest.mark.parametrize("flavour,path,status", [("ntfy", "/up{id}?up=1", 200),
                                                 ("nextpush", "/index.php/apps/uppush/push/{id}", 201),
                                                 ("autopush", "/wpush/v2/{id}", 201)])
def test_unifiedpush_flavours_give_their_endpoint_shape_decrypt_and_answer_as_their_server(mock, sender, flavour,
                                                                                         path, status):
    sub = mock.subscribe(flavour=flavour)
    assert sub["endpoint"] == mock.origin + path.format(id=sub["id"])
    r = sender.push(sub)
    assert r.status == status, r.body
    if flavour == "ntfy":
        assert json.loads(r.body)["event"] == "message" and "location" not in r.headers
    if flavour == "nextpush":
        assert r.headers["ttl"] == "0"
    [m] = mock.control("GET", f"/messages?subscription={sub['id']}")
    assert m["plaintext"] == '{"notification":{"title":"Hi"}}'
    # Another flavour's path shape for the same id is no endpoint of this subscription, and the checks still apply.
    assert sender.push(sub, path=f"/push/{sub['id']}").status == 404
    assert sender.push(sub, headers={"TTL": None}).status == 400


def test_autopush_410_says_how_long_to_cache_it(mock, sender):
    sub = mock.subscribe(flavour="autopush", marker="gone-410")
    r = sender.push(sub)
    assert r.status == 410 and r.headers["cache-control"] == "max-age=86400"


# MARK: - Pure rules (no sockets)


def test_rfc8291_appendix_a_vector_decrypts():
    ua = ec.derive_private_key(int.from_bytes(b64url_decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"), "big"),
                               ec.SECP256R1())
    body = b64url_decode(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK"
        "6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    assert webpush_rules.decrypt(body, ua, b64url_decode("BTBZMqHH6r4Tts7J_aSIgg")) == \
        b"When I grow up, I want to be a watermelon"
    with pytest.raises(Rejection) as e:
        webpush_rules.decrypt(body[:20] + bytes([64]) + body[21:], ua, b64url_decode("BTBZMqHH6r4Tts7J_aSIgg"))
    assert e.value.status == 400


def test_vapid_rules_without_sockets():
    key = ec.generate_private_key(ec.SECP256R1())
    k = b64url(point_of(key.public_key()))
    now = 1_700_000_000
    good = f"vapid t={sign_vapid(key, {'aud': 'https://a', 'exp': now + 60, 'sub': SUBJECT})}, k={k}"
    assert webpush_rules.verify_vapid(good, "https://a", now).claims["exp"] == now + 60
    for header, status in [
        (f"vapid t={sign_vapid(key, {'aud': 'https://a', 'exp': now + 60, 'sub': SUBJECT}, {'alg': 'ES384'})}, k={k}",
         403),
        (f"vapid t={sign_vapid(key, {'aud': 'https://a', 'exp': now + 60, 'sub': SUBJECT}, {'alg': 'none'})}, k={k}",
         403),
        (good + ", t=again", 401),
        (good.replace("k=", "k=AAAA"), 401),
    ]:
        with pytest.raises(Rejection) as e:
            webpush_rules.verify_vapid(header, "https://a", now)
        assert e.value.status == status, (header, e.value.reason)
    with pytest.raises(Rejection):
        webpush_rules.verify_vapid(good, "https://a", now + 60)  # exp == now: expired
