"""Tests of the strict mock FCM: the token endpoint and messages:send over real TLS (HTTP/2 and HTTP/1.1)."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import time
import urllib.parse
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

import fcm_rules
from mock_process import MockProcess, _reset  # noqa: F401  (_reset: an autouse fixture)

PROJECT = "push-test-1a2b3"
EMAIL = "firebase-adminsdk-x1@push-test-1a2b3.iam.gserviceaccount.com"
KID = "0123456789abcdef0123456789abcdef01234567"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def service_account(key: rsa.RSAPrivateKey, token_uri: str = "https://oauth2.googleapis.com/token",
                    project: str = PROJECT, kid: str = KID, email: str = EMAIL) -> dict[str, Any]:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"type": "service_account", "project_id": project, "private_key_id": kid, "private_key": pem,
            "client_email": email, "token_uri": token_uri}


def assertion(key: rsa.RSAPrivateKey, aud: str, *, kid: str = KID, iss: str = EMAIL, scope: str = SCOPE,
              iat: Any = None, lifetime: int = 3600, alg: str = "RS256") -> str:
    now = int(time.time()) if iat is None else iat
    header = b64url(json.dumps({"alg": alg, "typ": "JWT", "kid": kid}).encode())
    claims = b64url(json.dumps({"iss": iss, "scope": scope, "aud": aud, "iat": now,
                                "exp": (now if isinstance(now, int) else 0) + lifetime}).encode())
    signature = key.sign(f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{claims}.{b64url(signature)}"


class Mock(MockProcess):
    """A running mock_fcm.py process."""

    def __init__(self, account_path: str, *extra: str) -> None:
        super().__init__("mock_fcm.py", ["--service-account", account_path, *extra])
        self.token_uri: str = self.info["token_uri"]
        assert self.info["project"] == PROJECT


class Client:
    """A blocking HTTP/2 client over TLS with ALPN h2, one request at a time."""

    def __init__(self, mock: Mock) -> None:
        ctx = ssl.create_default_context(cafile=mock.ca_file)
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", mock.port), timeout=10),
                                    server_hostname="127.0.0.1")
        assert self.sock.selected_alpn_protocol() == "h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())

    def request(self, method: str, path: str, body: bytes, headers: list[tuple[str, str]]) -> tuple[int, dict[str, str], Any]:
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", method), (":scheme", "https"), (":authority", "127.0.0.1"),
                                     (":path", path)] + headers, end_stream=not body)
        if body:
            self.conn.send_data(sid, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        status, response_headers, data, ended = 0, {}, b"", False
        while not ended:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == sid:
                    response_headers = dict(event.headers)
                    status = int(response_headers[":status"])
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == sid:
                    data += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length, sid)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == sid:
                    ended = True
            self.sock.sendall(self.conn.data_to_send())
        return status, response_headers, json.loads(data)

    def token(self, jwt: str, grant: str = GRANT) -> tuple[int, Any]:
        body = urllib.parse.urlencode({"grant_type": grant, "assertion": jwt}).encode()
        status, _, answer = self.request("POST", "/token", body,
                                         [("content-type", "application/x-www-form-urlencoded")])
        return status, answer

    def send(self, access_token: str | None, message: Any, project: str = PROJECT,
             body: bytes | None = None) -> tuple[int, dict[str, str], Any]:
        headers = [("content-type", "application/json")]
        if access_token is not None:
            headers.append(("authorization", f"Bearer {access_token}"))
        data = body if body is not None else json.dumps({"message": message}).encode()
        return self.request("POST", f"/v1/projects/{project}/messages:send", data, headers)


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def mock(key: rsa.RSAPrivateKey, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("fcm") / "service-account.json"
    path.write_text(json.dumps(service_account(key)))
    m = Mock(str(path))
    yield m
    m.stop()


@pytest.fixture
def client(mock: Mock):
    c = Client(mock)
    yield c
    c.sock.close()


@pytest.fixture
def access_token(mock: Mock, client: Client, key: rsa.RSAPrivateKey) -> str:
    status, answer = client.token(assertion(key, mock.token_uri))
    assert status == 200, answer
    return answer["access_token"]


def fcm_code(answer: Any) -> str | None:
    for detail in answer["error"]["details"]:
        if detail["@type"] == fcm_rules.FCM_ERROR:
            return detail["errorCode"]
    return None


MESSAGE = {"token": "device-1", "notification": {"title": "Hi"}, "data": {"k": "v"},
           "android": {"priority": "HIGH", "ttl": "3600s", "notification": {"channel_id": "news", "color": "#00ff00"}}}


# MARK: - Token endpoint


def test_valid_assertion_gets_an_opaque_bearer_token(mock, client, key):
    status, answer = client.token(assertion(key, mock.token_uri))
    assert status == 200
    assert answer["token_type"] == "Bearer" and answer["expires_in"] == 3599 and answer["access_token"]
    assert mock.control("GET", "/stats")["tokens_issued"] == 1


@pytest.mark.parametrize("change,error", [
    ({"aud": "https://oauth2.googleapis.com/token"}, "invalid_grant"),
    ({"iss": "someone@else.iam.gserviceaccount.com"}, "invalid_grant"),
    ({"kid": "unknown-key-id"}, "invalid_grant"),
    ({"scope": "https://www.googleapis.com/auth/userinfo.email"}, "invalid_scope"),
    ({"iat_offset": -600}, "invalid_grant"),
    ({"iat_offset": 600}, "invalid_grant"),
    ({"lifetime": 3601}, "invalid_grant"),
    ({"iat": "now"}, "invalid_grant"),
    ({"alg": "HS256"}, "invalid_grant"),
])
def test_bad_assertions_are_refused_with_googles_oauth_errors(mock, client, key, change, error):
    kw: dict[str, Any] = {"aud": mock.token_uri}
    if "iat_offset" in change:
        kw["iat"] = int(time.time()) + change.pop("iat_offset")
    kw.update(change)
    status, answer = client.token(assertion(key, **kw))
    assert (status, answer["error"]) == (400, error), answer
    assert mock.control("GET", "/stats")["tokens_issued"] == 0


@pytest.mark.parametrize("refusal,status", [("invalid_grant", 400), ("invalid_client", 401)])
def test_token_refusal_switch_refuses_even_a_valid_assertion_until_cleared(mock, client, key, refusal, status):
    mock.control("PUT", "/config", {"token_refusal": refusal})
    got, answer = client.token(assertion(key, mock.token_uri))
    assert (got, answer["error"]) == (status, refusal), answer
    assert answer["error_description"]
    stats = mock.control("GET", "/stats")
    assert stats["tokens_issued"] == 0 and stats["token_refusals"] == {refusal: 1}
    mock.control("PUT", "/config", {"token_refusal": ""})
    assert client.token(assertion(key, mock.token_uri))[0] == 200


@pytest.mark.parametrize("body", [
    {"token_lifetime_s": 0},
    {"retry_after_s": 9, "token_lifetime_s": 0},
    {"retry_after_s": 9, "record_limit": "many"},
    {"retry_after_s": 9, "record_limit": -1},
    {"send_latency_ms": -1},
])
def test_a_refused_config_change_changes_nothing(mock, body):
    before = mock.control("GET", "/config")
    mock.control("PUT", "/config", body, expect=400)
    assert mock.control("GET", "/config") == before


def test_token_unavailable_switch_answers_503_that_many_times(mock, client, key):
    mock.control("PUT", "/config", {"token_unavailable": 2})
    statuses = [client.token(assertion(key, mock.token_uri))[0] for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert mock.control("GET", "/config")["token_unavailable"] == 0


def test_send_latency_delays_the_answer_to_a_send_but_not_the_token_and_records_on_arrival(mock, client, key,
                                                                                           access_token):
    mock.control("PUT", "/config", {"send_latency_ms": 600})
    try:
        started = time.monotonic()
        assert client.token(assertion(key, mock.token_uri))[0] == 200
        token_took = time.monotonic() - started
        started = time.monotonic()
        status, _, _ = client.send(access_token, {**MESSAGE, "token": "slow-1"})
        send_took = time.monotonic() - started
    finally:
        mock.control("PUT", "/config", {"send_latency_ms": 0})
    assert status == 200 and send_took >= 0.6 and token_took < 0.6, (token_took, send_took)
    [record] = mock.control("GET", "/requests?token=slow-1")
    assert record["time"] <= time.time() - 0.5, "recorded when it arrived, not when answered"


def test_denied_marker_is_permission_denied_without_an_fcm_code(client, access_token):
    status, _, answer = client.send(access_token, {**MESSAGE, "token": "denied-1"})
    assert status == 403 and answer["error"]["status"] == "PERMISSION_DENIED" and fcm_code(answer) is None


def test_assertion_signed_by_another_key_is_an_invalid_signature(mock, client):
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    status, answer = client.token(assertion(stranger, mock.token_uri))
    assert (status, answer["error"], answer["error_description"]) == (400, "invalid_grant", "Invalid JWT Signature.")


def test_tampered_claims_fail_the_signature(mock, client, key):
    header, claims, signature = assertion(key, mock.token_uri).split(".")
    forged = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    forged["exp"] += 1
    status, answer = client.token(".".join([header, b64url(json.dumps(forged).encode()), signature]))
    assert (status, answer["error_description"]) == (400, "Invalid JWT Signature.")


def test_wrong_grant_type_and_content_type_are_refused(mock, client, key):
    status, answer = client.token(assertion(key, mock.token_uri), grant="client_credentials")
    assert (status, answer["error"]) == (400, "unsupported_grant_type")
    body = json.dumps({"grant_type": GRANT, "assertion": assertion(key, mock.token_uri)}).encode()
    status, _, answer = client.request("POST", "/token", body, [("content-type", "application/json")])
    assert (status, answer["error"]) == (400, "invalid_request")


def test_token_endpoint_speaks_http1_too(mock, key):
    ctx = ssl.create_default_context(cafile=mock.ca_file)
    ctx.set_alpn_protocols(["http/1.1"])
    conn = http.client.HTTPSConnection("127.0.0.1", mock.port, context=ctx, timeout=10)
    body = urllib.parse.urlencode({"grant_type": GRANT, "assertion": assertion(key, mock.token_uri)})
    conn.request("POST", "/token", body=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["token_type"] == "Bearer"
    assert mock.control("GET", "/stats")["protocols"].get("http/1.1") == 1


# MARK: - messages:send


def test_valid_message_is_accepted_and_recorded(mock, client, access_token):
    status, headers, answer = client.send(access_token, MESSAGE)
    assert status == 200 and answer["name"].startswith(f"projects/{PROJECT}/messages/")
    [record] = mock.control("GET", "/requests?token=device-1")
    assert record["message"] == MESSAGE and record["account"] == EMAIL and record["status"] == 200


def test_missing_unknown_or_expired_bearer_is_unauthenticated(mock, client, access_token):
    for token in (None, "ya29.never-issued"):
        status, _, answer = client.send(token, MESSAGE)
        assert (status, answer["error"]["status"]) == (401, "UNAUTHENTICATED")
    assert client.send(access_token, MESSAGE)[0] == 200
    assert mock.control("POST", "/expire-tokens")["expired"] >= 1  # tokens outlive /reset, as a client's cache does
    status, _, answer = client.send(access_token, MESSAGE)
    assert (status, answer["error"]["status"], fcm_code(answer)) == (401, "UNAUTHENTICATED", None)


def test_token_expires_after_its_lifetime_on_the_mocks_clock(mock, client, access_token):
    assert client.send(access_token, MESSAGE)[0] == 200
    mock.control("PUT", "/config", {"clock_offset_s": 3600})
    assert client.send(access_token, MESSAGE)[0] == 401


def test_wrong_project_is_not_found_without_fcm_code(mock, client, access_token):
    status, _, answer = client.send(access_token, MESSAGE, project="other-project")
    assert (status, answer["error"]["status"], fcm_code(answer)) == (404, "NOT_FOUND", None)
    assert mock.control("GET", "/requests")[0]["status"] == 404


@pytest.mark.parametrize("message,fragment", [
    ({**MESSAGE, "data": {"count": 3}}, "message.data[0].value"),
    ({**MESSAGE, "data": {"nested": {"a": "b"}}}, "message.data[0].value"),
    ({**MESSAGE, "data": {"from": "x"}}, "reserved key"),
    ({**MESSAGE, "data": {"google.x": "y"}}, "reserved key"),
    ({**MESSAGE, "notification": {"title": "t", "click_action": "x"}}, "Unknown name \"click_action\""),
    ({**MESSAGE, "color": "#000000"}, "Unknown name \"color\""),
    ({**MESSAGE, "topic": "news"}, "exactly one of"),
    ({k: v for k, v in MESSAGE.items() if k != "token"}, "exactly one of"),
    ({**MESSAGE, "android": {"ttl": "3600"}}, "message.android.ttl"),
    ({**MESSAGE, "android": {"ttl": "2419201s"}}, "message.android.ttl"),
    ({**MESSAGE, "android": {"priority": "urgent"}}, "message.android.priority"),
    ({**MESSAGE, "android": {"notification": {"body_loc_args": [1]}}}, "body_loc_args"),
    ({**MESSAGE, "android": {"notification": {"color": "red"}}}, "color"),
    ({**MESSAGE, "notification": {"title": 1}}, "message.notification.title"),
    ({**MESSAGE, "data": {"k": "x" * 4100}}, "too big"),
])
def test_schema_violations_are_400_invalid_argument(mock, client, access_token, message, fragment):
    status, _, answer = client.send(access_token, message)
    assert (status, answer["error"]["status"]) == (400, "INVALID_ARGUMENT"), answer
    assert fragment in answer["error"]["message"], answer
    assert mock.control("GET", "/stats")["by_status"] == {"400": 1}


def test_unknown_top_level_member_and_non_json_are_rejected(mock, client, access_token):
    status, _, answer = client.send(access_token, None, body=json.dumps({"message": MESSAGE, "dry_run": True}).encode())
    assert status == 400 and "Unknown name \"dry_run\"" in answer["error"]["message"]
    assert client.send(access_token, None, body=b"{not json")[0] == 400
    status, _, _ = client.send(access_token, None, body=json.dumps({"message": MESSAGE, "validate_only": True}).encode())
    assert status == 200


def test_priority_is_case_insensitive_and_fractional_ttl_allowed(client, access_token):
    message = {**MESSAGE, "android": {"priority": "normal", "ttl": "1.5s"}}
    assert client.send(access_token, message)[0] == 200


@pytest.mark.parametrize("token,status,code,retry_after", [
    ("unregistered-1", 404, "UNREGISTERED", None),
    ("mismatch-1", 403, "SENDER_ID_MISMATCH", None),
    ("invalid-1", 400, "INVALID_ARGUMENT", None),
    ("quota-1", 429, "QUOTA_EXCEEDED", "1"),
    ("unavailable-1", 503, "UNAVAILABLE", "1"),
    ("internal-1", 500, "INTERNAL", None),
    ("thirdparty-1", 401, "THIRD_PARTY_AUTH_ERROR", None),
    ("denied-1", 403, None, None),
])
def test_marker_tokens_get_fcms_error_answers(mock, client, access_token, token, status, code, retry_after):
    got, headers, answer = client.send(access_token, {**MESSAGE, "token": token})
    assert (got, fcm_code(answer), headers.get("retry-after")) == (status, code, retry_after)
    assert mock.control("GET", "/stats")["per_token"] == {token: {str(status): 1}}


def test_behaviour_scripts_a_limited_number_of_failures(mock, client, access_token):
    mock.control("PUT", "/behaviours/device-*", {"answer": "unavailable", "times": 2})
    mock.control("PUT", "/config", {"retry_after_s": 7})
    statuses = [client.send(access_token, MESSAGE)[:2] for _ in range(3)]
    assert [(s, h.get("retry-after")) for s, h in statuses] == [(503, "7"), (503, "7"), (200, None)]
    mock.control("PUT", "/behaviours/device-*", {"answer": "quota", "times": 1})
    mock.control("PUT", "/config", {"retry_after_s": -1})
    status, headers = client.send(access_token, MESSAGE)[:2]
    assert (status, headers.get("retry-after")) == (429, None), "a negative retry_after_s sends no Retry-After"
    mock.control("PUT", "/behaviours/unregistered-x", {"answer": "ok"})
    assert client.send(access_token, {**MESSAGE, "token": "unregistered-x"})[0] == 200
    mock.control("PUT", "/behaviours/x", {"answer": "teapot"}, expect=400)


def test_schema_is_checked_before_marker_answers(client, access_token):
    status, _, answer = client.send(access_token, {**MESSAGE, "token": "unregistered-1", "data": {"n": 1}})
    assert status == 400 and fcm_code(answer) == "INVALID_ARGUMENT"


# MARK: - Rules without sockets


def test_rules_refuse_assertions_outside_the_time_window(key):
    accounts = {KID: fcm_rules.Account(EMAIL, KID, PROJECT, key.public_key())}
    uri = "https://127.0.0.1:1/token"
    form = lambda jwt: urllib.parse.urlencode({"grant_type": GRANT, "assertion": jwt}).encode()  # noqa: E731
    ok = fcm_rules.check_assertion_request("application/x-www-form-urlencoded", form(assertion(key, uri, iat=1000)),
                                           accounts, uri, now=1030)
    assert ok == accounts[KID]
    late = fcm_rules.check_assertion_request("application/x-www-form-urlencoded", form(assertion(key, uri, iat=1000)),
                                             accounts, uri, now=1061)
    assert isinstance(late, fcm_rules.Answer) and late.body["error"] == "invalid_grant"
    expired = fcm_rules.check_assertion_request("application/x-www-form-urlencoded",
                                                form(assertion(key, uri, iat=1000, lifetime=10)), accounts, uri, now=1010)
    assert isinstance(expired, fcm_rules.Answer)


def test_rules_bool_is_not_an_integer_date(key):
    accounts = {KID: fcm_rules.Account(EMAIL, KID, PROJECT, key.public_key())}
    uri = "https://127.0.0.1:1/token"
    header = b64url(json.dumps({"alg": "RS256", "kid": KID}).encode())
    claims = b64url(json.dumps({"iss": EMAIL, "scope": SCOPE, "aud": uri, "iat": True, "exp": 3600}).encode())
    signature = key.sign(f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    body = urllib.parse.urlencode({"grant_type": GRANT, "assertion": f"{header}.{claims}.{b64url(signature)}"}).encode()
    answer = fcm_rules.check_assertion_request("application/x-www-form-urlencoded", body, accounts, uri, now=1)
    assert isinstance(answer, fcm_rules.Answer) and "integers" in answer.body["error_description"]
