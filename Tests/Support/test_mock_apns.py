"""Tests of the strict mock APNs: every rule over real TLS + HTTP/2, plus the pure rules without sockets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import h2.errors
import pytest

import apns_rules
from apns_rules import ConnectionAuth, KeyRing, Policy, Request
from mock_apns_testkit import HERE, KID, KID2, TEAM, TOPIC, H2Client, Mock, new_apns_id, sign_jwt
from mock_apns_testkit import _reset, client, keys, mock  # noqa: F401  (fixtures)

TOKEN = "ab" * 32
UUID_LOWER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# MARK: - Accepted requests


def test_valid_request_answers_200_headers_only_with_generated_apns_id(mock, client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1))
    assert r.status == 200
    assert UUID_LOWER.fullmatch(r.headers["apns-id"])
    assert "apns-unique-id" in r.headers  # sandbox mode
    assert r.body == b"" and r.data_frames == 0  # END_STREAM on HEADERS, never a DATA frame
    [rec] = mock.requests(TOKEN)
    assert rec["status"] == 200 and rec["jwt"]["kid"] == KID and rec["jwt"]["iss"] == TEAM
    assert rec["payload"] == {"aps": {"alert": "hi"}} and rec["headers"]["apns-topic"] == TOPIC


def test_valid_request_echoes_given_apns_id(client, keys):
    apns_id = new_apns_id()
    r = client().request(TOKEN, sign_jwt(keys.key1), extra=[("apns-id", apns_id)])
    assert (r.status, r.headers["apns-id"]) == (200, apns_id)


def test_accepts_device_tokens_of_any_even_hex_length(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    assert c.request("ab" * 100, jwt).status == 200
    assert c.request("0A1b", jwt).status == 200


def test_voip_payload_of_5000_bytes_is_accepted(client, keys):
    payload = {"aps": {}, "pad": "x" * (5000 - len('{"aps": {}, "pad": ""}'))}
    body = json.dumps(payload).encode()
    assert len(body) == 5000
    r = client().request(TOKEN, sign_jwt(keys.key1), body=body, topic=TOPIC + ".voip", push_type="voip")
    assert r.status == 200, r.body


def test_background_push_with_priority_5_is_accepted(client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1), payload={"aps": {"content-available": 1}},
                         push_type="background", priority="5")
    assert r.status == 200, r.body


# MARK: - Method, path, token, headers


@pytest.mark.parametrize("method,path,status,reason", [
    ("GET", f"/3/device/{TOKEN}", 405, "MethodNotAllowed"),
    ("POST", f"/2/device/{TOKEN}", 404, "BadPath"),
    ("POST", f"/3/device/{TOKEN}/x", 404, "BadPath"),
    ("POST", "/3/device/", 400, "MissingDeviceToken"),
    ("POST", "/3/device/abc", 400, "BadDeviceToken"),
    ("POST", "/3/device/zz" + "ab" * 31, 400, "BadDeviceToken"),
])
def test_rejects_bad_method_path_and_device_token(client, keys, method, path, status, reason):
    r = client().request(TOKEN, sign_jwt(keys.key1), method=method, path=path)
    assert (r.status, r.reason) == (status, reason)


def test_rejects_duplicate_apns_headers(client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1), extra=[("apns-priority", "10"), ("apns-priority", "5")])
    assert (r.status, r.reason) == (400, "DuplicateHeaders")


@pytest.mark.parametrize("extra,reason", [
    ([("apns-priority", "7")], "BadPriority"),
    ([("apns-id", "NOT-A-UUID")], "BadMessageId"),
    ([("apns-id", new_apns_id().upper())], "BadMessageId"),
    ([("apns-expiration", "soon")], "BadExpirationDate"),
    ([("apns-collapse-id", "c" * 65)], "BadCollapseId"),
])
def test_rejects_invalid_apns_headers(client, keys, extra, reason):
    r = client().request(TOKEN, sign_jwt(keys.key1), extra=extra)
    assert (r.status, r.reason) == (400, reason)


def test_collapse_id_of_64_bytes_is_accepted(client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1), extra=[("apns-collapse-id", "c" * 64)])
    assert r.status == 200


@pytest.mark.parametrize("topic,push_type,reason", [
    (None, "alert", "MissingTopic"),
    ("com.unknown.app", "alert", "BadTopic"),
    (TOPIC, "voip", "DeviceTokenNotForTopic"),
    (TOPIC + ".voip", "alert", "DeviceTokenNotForTopic"),
    (TOPIC, "banner", "InvalidPushType"),
    (TOPIC, None, "InvalidPushType"),
])
def test_rejects_wrong_topic_and_push_type(client, keys, topic, push_type, reason):
    r = client().request(TOKEN, sign_jwt(keys.key1), topic=topic, push_type=push_type)
    assert (r.status, r.reason) == (400, reason)


def test_background_push_with_priority_10_or_none_is_bad_priority(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    payload = {"aps": {"content-available": 1}}
    assert c.request(TOKEN, jwt, payload=payload, push_type="background", priority="10").reason == "BadPriority"
    assert c.request(TOKEN, jwt, payload=payload, push_type="background").reason == "BadPriority"


@pytest.mark.parametrize("payload,push_type", [
    ({"aps": {"alert": "hi", "content-available": 1}}, "background"),
    ({"aps": {"badge": 1, "content-available": 1}}, "background"),
    ({"aps": {}}, "background"),
    ({"aps": {"content-available": 1}}, "alert"),
])
def test_push_type_inconsistent_with_payload_is_invalid_push_type(client, keys, payload, push_type):
    r = client().request(TOKEN, sign_jwt(keys.key1), payload=payload, push_type=push_type, priority="5")
    assert (r.status, r.reason) == (400, "InvalidPushType")


def test_payload_rules(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    assert (c.request(TOKEN, jwt, body=b"").status, c.responses[1].reason) == (400, "PayloadEmpty")
    big = json.dumps({"aps": {"alert": "x" * (4097 - len('{"aps": {"alert": ""}}'))}}).encode()
    assert len(big) == 4097
    r = c.request(TOKEN, jwt, body=big)
    assert (r.status, r.reason) == (413, "PayloadTooLarge")
    exact = big[:-len('x"}}')] + b'"}}'
    assert len(exact) == 4096 and c.request(TOKEN, jwt, body=exact).status == 200
    assert c.request(TOKEN, jwt, body=b"{not json").reason == "BadPayload"
    assert c.request(TOKEN, jwt, body=b"[1,2]").reason == "BadPayload"
    voip_big = json.dumps({"aps": {}, "p": "x" * 5200}).encode()
    r = c.request(TOKEN, jwt, body=voip_big, topic=TOPIC + ".voip", push_type="voip")
    assert (r.status, r.reason) == (413, "PayloadTooLarge")


# MARK: - Provider tokens


def test_missing_or_empty_authorization_is_missing_provider_token(mock, client, keys):
    c = client()
    assert (c.request(TOKEN, None).status, c.responses[1].reason) == (403, "MissingProviderToken")
    r = c.request(TOKEN, None, extra=[("authorization", "bearer ")])
    assert r.reason == "MissingProviderToken"
    assert mock.requests()[0]["payload"] == {"aps": {"alert": "hi"}}  # recorded whatever the answer


def _der_signed(key) -> str:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    from mock_apns_testkit import b64url
    signing_input = sign_jwt(key).rsplit(".", 1)[0]
    return f"{signing_input}.{b64url(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))}"


@pytest.mark.parametrize("make", [
    lambda k: sign_jwt(k.stranger),                      # signature from a key the team does not have
    lambda k: sign_jwt(k.key1, kid="UNKNOWNKID"),        # unknown key id
    lambda k: sign_jwt(k.key1, iss="OTHERTEAM1"),        # other team
    lambda k: sign_jwt(k.key1, alg="ES384"),             # wrong algorithm
    lambda k: sign_jwt(k.key1, iat="1700000000"),        # iat not a number
    lambda k: sign_jwt(k.key1)[:-4] + "AAAA",            # tampered signature
    lambda k: "a.b",                                      # two segments
    lambda k: _der_signed(k.key1),                        # DER signature (OpenSSL's format), not JWS r||s
    lambda k: sign_jwt(k.key1, iat=int(time.time()) + 600),  # issued in the future
])
def test_invalid_provider_tokens(client, keys, make):
    r = client().request(TOKEN, make(keys))
    assert (r.status, r.reason) == (403, "InvalidProviderToken")


def test_token_older_than_one_hour_is_expired(client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1, iat=int(time.time()) - 3601))
    assert (r.status, r.reason) == (403, "ExpiredProviderToken")


def test_new_token_within_20_minutes_on_one_connection_is_too_many_updates(mock, client, keys):
    now = int(time.time())
    c = client()
    first = sign_jwt(keys.key1, iat=now - 1000)
    assert c.request(TOKEN, first).status == 200
    r = c.request(TOKEN, sign_jwt(keys.key1, iat=now))  # only 1000 s later
    assert (r.status, r.reason) == (429, "TooManyProviderTokenUpdates")
    assert c.request(TOKEN, first).status == 200  # the connection keeps its token
    # The same new token is fine on a fresh connection.
    assert client().request(TOKEN, sign_jwt(keys.key1, iat=now)).status == 200


def test_new_token_after_20_minutes_on_one_connection_is_accepted(mock, client, keys):
    now = int(time.time())
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.key1, iat=now - 1300)).status == 200
    assert c.request(TOKEN, sign_jwt(keys.key1, iat=now)).status == 200
    [conn] = [x for x in mock.control("GET", "/stats")["connections"] if x["requests"] == 2]
    assert conn["tokens_seen"] == 2


def test_other_key_id_than_first_push_is_unrelated_key(client, keys):
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.key1, kid=KID, iat=int(time.time()) - 1500)).status == 200
    r = c.request(TOKEN, sign_jwt(keys.key2, kid=KID2))
    assert (r.status, r.reason) == (403, "UnrelatedKeyIdInToken")
    assert client().request(TOKEN, sign_jwt(keys.key2, kid=KID2)).status == 200


# MARK: - HTTP/2 behaviour


def test_one_stream_until_first_valid_token_then_max_streams(mock, client, keys):
    c = client(unlimited=True)
    c.pump()  # the server's first SETTINGS
    assert c.conn.remote_settings.max_concurrent_streams == 1
    jwt = sign_jwt(keys.key1)
    first = c.send(TOKEN, jwt, end_stream=False)  # keep stream 1 open ...
    second = c.send(TOKEN, jwt)                   # ... so this one is over the limit
    c.finish_stream(first)
    r1, r2 = c.wait(first, second)
    assert r2.reset == h2.errors.ErrorCodes.REFUSED_STREAM
    assert r1.status == 200
    assert c.max_streams_seen[-1] == 50
    sids = [c.send(TOKEN, jwt, end_stream=False) for _ in range(10)]
    for s in sids:
        c.finish_stream(s)
    assert all(r.status == 200 for r in c.wait(*sids))
    stats = mock.control("GET", "/stats")
    assert stats["refused_streams"] == 1 and stats["max_concurrent_streams_observed"] >= 2


def test_raise_after_answer_keeps_one_stream_until_the_first_200_then_sends_settings_right_behind_it(
        mock, client, keys):
    mock.control("PUT", "/config", {"raise_streams_after_answer": True, "delay_ms": 100})
    c = client(unlimited=True)
    jwt = sign_jwt(keys.key1)
    first = c.send(TOKEN, jwt)
    second = c.send("cd" * 32, jwt)  # the token is verified, but the answer (and so the raise) is 100 ms away
    r1, r2 = c.wait(first, second)
    assert r2.reset == h2.errors.ErrorCodes.REFUSED_STREAM and r2.status is None
    assert r1.status == 200
    while c.max_streams_seen[-1:] != [50] and c.pump(2):
        pass
    # Apple's order: the probe's 200 first, then the SETTINGS frame that lifts the limit.
    assert c.events == [("max_streams", 1), ("status", first), ("max_streams", 50)]
    sids = [c.send(f"{n:02x}" * 32, jwt) for n in range(16, 26)]
    assert all(r.status == 200 for r in c.wait(*sids))
    stats = mock.control("GET", "/stats")
    assert stats["refused_streams"] == 1 and stats["max_concurrent_streams_observed"] >= 2


def test_without_raise_after_answer_the_limit_is_lifted_before_the_first_answer(mock, client, keys):
    mock.control("PUT", "/config", {"delay_ms": 100})
    c = client(unlimited=True)
    jwt = sign_jwt(keys.key1)
    first = c.send(TOKEN, jwt)
    r1 = c.wait(first)[0]
    assert r1.status == 200
    assert c.events == [("max_streams", 1), ("max_streams", 50), ("status", first)]


def test_raise_after_answer_never_raises_for_a_rejected_token(mock, client, keys):
    mock.control("PUT", "/config", {"raise_streams_after_answer": True})
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.stranger)).status == 403
    mock.control("PUT", "/config", {"max_streams": 9})  # re-advertised only to authenticated connections
    c.pump(0.3)
    assert c.max_streams_seen == [1]


def test_raise_after_answer_waits_for_the_answer_even_when_max_streams_changes_meanwhile(mock, client, keys):
    mock.control("PUT", "/config", {"raise_streams_after_answer": True, "delay_ms": 300})
    c = client()
    first = c.send(TOKEN, sign_jwt(keys.key1))
    time.sleep(0.1)  # verified, not answered yet
    mock.control("PUT", "/config", {"max_streams": 9})
    assert c.wait(first)[0].status == 200
    while c.max_streams_seen[-1:] != [9] and c.pump(2):
        pass
    assert c.events == [("max_streams", 1), ("status", first), ("max_streams", 9)]


def test_raise_after_answer_works_with_goaway_after_n_and_latency(mock, client, keys):
    mock.control("PUT", "/config", {"raise_streams_after_answer": True, "goaway_after": 4, "delay_ms": 50})
    c = client()
    jwt = _auth(c, keys)  # answer 1, then the raise
    while c.max_streams_seen[-1:] != [50] and c.pump(2):
        pass
    tokens = [f"{n:02x}" * 32 for n in range(1, 4)]
    sids = [c.send(t, jwt) for t in tokens]  # answers 2-4: GOAWAY after the last
    rs = c.wait(*sids)
    assert [r.status for r in rs] == [200] * 3
    while c.goaway is None and c.pump(2):
        pass
    assert c.goaway is not None and c.goaway.last_stream_id == sids[-1]
    assert c.max_streams_seen == [1, 50]
    stats = mock.control("GET", "/stats")
    assert stats["goaways_sent"] == 1 and stats["unanswered"] == 0 and stats["refused_streams"] == 0


def test_invalid_token_keeps_single_stream(client, keys):
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.stranger)).status == 403
    assert c.conn.remote_settings.max_concurrent_streams == 1
    assert c.max_streams_seen == [1]  # only the initial SETTINGS


def test_config_max_streams_is_sent_to_authenticated_connections(mock, client, keys):
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.key1)).status == 200
    mock.control("PUT", "/config", {"max_streams": 7})
    while c.conn.remote_settings.max_concurrent_streams != 7 and c.pump(2):
        pass
    assert c.conn.remote_settings.max_concurrent_streams == 7


@pytest.mark.parametrize("body", [
    {"delay_ms": 5, "record_limit": -1},
    {"delay_ms": 5, "max_streams": "many"},
    {"delay_ms": 5, "token_floor_scope": "node"},
    {"delay_ms": 5, "nonsense": 1},
])
def test_a_refused_config_change_changes_nothing(mock, body):
    before = mock.control("GET", "/config")
    mock.control("PUT", "/config", body, expect=400)
    assert mock.control("GET", "/config") == before


def test_http11_client_is_dropped_without_status(mock):
    import socket
    import ssl
    ctx = ssl.create_default_context(cafile=mock.ca_file)
    ctx.set_alpn_protocols(["http/1.1"])
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", mock.port), timeout=5), server_hostname="127.0.0.1")
    s.sendall(f"POST /3/device/{TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}".encode())
    received = b""
    try:
        while chunk := s.recv(4096):
            received += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    # The server's HTTP/2 preface (SETTINGS) may arrive, then the connection closes: never an HTTP/1.1 status.
    assert not received.startswith(b"HTTP/")
    assert mock.control("GET", "/stats")["requests"] == 0


# MARK: - Behaviours


def test_behaviour_410_with_timestamp(mock, client, keys):
    mock.behave(TOKEN, status=410, reason="Unregistered", timestamp=1_700_000_000_123)
    r = client().request(TOKEN, sign_jwt(keys.key1))
    assert r.status == 410 and r.json == {"reason": "Unregistered", "timestamp": 1_700_000_000_123}


def test_behaviour_410_without_timestamp_uses_now(mock, client, keys):
    mock.behave(TOKEN, status=410, reason="ExpiredToken")
    before = int(time.time() * 1000)
    r = client().request(TOKEN, sign_jwt(keys.key1))
    assert r.status == 410 and before <= r.json["timestamp"] <= int(time.time() * 1000)


def test_behaviour_for_first_n_requests_then_200(mock, client, keys):
    mock.behave(TOKEN, status=503, reason="ServiceUnavailable", times=2)
    c, jwt = client(), sign_jwt(keys.key1)
    got = [(r.status, r.reason) for r in (c.request(TOKEN, jwt) for _ in range(3))]
    assert got == [(503, "ServiceUnavailable"), (503, "ServiceUnavailable"), (200, None)]
    stats = mock.control("GET", "/stats")
    assert stats["per_token"][TOKEN] == {"503": 2, "200": 1} and stats["by_reason"] == {"ServiceUnavailable": 2}


def test_behaviour_applies_only_to_valid_requests(mock, client, keys):
    mock.behave(TOKEN, status=410, reason="Unregistered")
    r = client().request(TOKEN, None)
    assert (r.status, r.reason) == (403, "MissingProviderToken")


def test_prefix_behaviour(mock, client, keys):
    mock.behave("dead*", status=400, reason="BadDeviceToken")
    c, jwt = client(), sign_jwt(keys.key1)
    assert c.request("dead" + "00" * 30, jwt).reason == "BadDeviceToken"
    assert c.request(TOKEN, jwt).status == 200


def test_behaviour_delay(mock, client, keys):
    mock.behave(TOKEN, delay_ms=300)
    c, jwt = client(), sign_jwt(keys.key1)
    slow = c.send(TOKEN, jwt)
    fast = c.send("cd" * 32, jwt)  # not delayed: answered first although sent second
    order = []
    while len(order) < 2 and c.pump():
        order += [s for s in (slow, fast) if c.responses[s].ended and s not in order]
    assert order == [fast, slow]


def test_global_delay_config(mock, client, keys):
    mock.control("PUT", "/config", {"delay_ms": 200})
    start = time.monotonic()
    assert client().request(TOKEN, sign_jwt(keys.key1)).status == 200
    assert time.monotonic() - start >= 0.2


def test_behaviour_goaway_after_answer(mock, client, keys):
    mock.behave(TOKEN, status=503, reason="Shutdown", action="goaway")
    c = client()
    r = c.request(TOKEN, sign_jwt(keys.key1))
    assert (r.status, r.reason) == (503, "Shutdown")
    while c.goaway is None and c.pump():
        pass
    assert c.goaway is not None and json.loads(c.goaway.additional_data) == {"reason": "Shutdown"}
    assert c.goaway.last_stream_id == r.stream_id
    while c.pump():
        pass
    assert c.closed


def test_behaviour_goaway_instead_of_answer(mock, client, keys):
    mock.behave(TOKEN, status=403, reason="BadCertificateEnvironment", action="goaway_unanswered",
                goaway_error=2)
    c = client()
    r = c.request(TOKEN, sign_jwt(keys.key1))
    assert r.status is None
    while c.goaway is None and c.pump():
        pass
    assert c.goaway.error_code == 2 and c.goaway.last_stream_id < r.stream_id
    assert json.loads(c.goaway.additional_data) == {"reason": "BadCertificateEnvironment"}


def test_behaviour_drop_closes_connection_without_answer(mock, client, keys):
    mock.behave(TOKEN, action="drop", times=1)
    c = client()
    r = c.request(TOKEN, sign_jwt(keys.key1))
    assert r.status is None and c.closed and c.goaway is None
    assert mock.control("GET", "/stats")["connections_dropped"] == 1
    assert client().request(TOKEN, sign_jwt(keys.key1)).status == 200  # only the first time


# MARK: - Control API and process


def test_recording_can_be_switched_off_keeping_counts(mock, client, keys):
    mock.control("PUT", "/config", {"record": False})
    c, jwt = client(), sign_jwt(keys.key1)
    for _ in range(3):
        assert c.request(TOKEN, jwt).status == 200
    assert mock.requests() == []
    assert mock.control("GET", "/stats")["per_token"][TOKEN] == {"200": 3}


def test_control_api_rejects_unknown_fields(mock):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", mock.control_port, timeout=5)
    conn.request("PUT", f"/behaviours/{TOKEN}", body=json.dumps({"statsu": 410}))
    assert conn.getresponse().status == 400


def test_mock_exits_when_stdin_closes(keys):
    m = Mock(["--key", f"{KID}={keys.pub1}", "--topic", TOPIC])
    m.proc.stdin.close()
    assert m.proc.wait(timeout=10) == 0


def test_mock_rejects_malformed_key_argument():
    p = subprocess.run([sys.executable, f"{HERE}/mock_apns.py", "--key", "nokey"], stdin=subprocess.DEVNULL,
                       capture_output=True)
    assert p.returncode != 0


# MARK: - Pure rules (no sockets)


def test_rules_order_and_refresh_state_without_sockets(keys):
    from mock_apns_testkit import sign_jwt as sign
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: F401
    ring = KeyRing(TEAM, {KID: keys.key1.public_key()})
    auth = ConnectionAuth()
    policy = Policy(frozenset([TOPIC]))
    now = 1_800_000_000.0
    jwt = sign(keys.key1, iat=int(now))

    def check(headers, body=b'{"aps":{"alert":"x"}}', path=f"/3/device/{TOKEN}", method="POST", at=now):
        return apns_rules.check_request(Request(method, path, headers, body), ring, auth, policy, at).verdict

    base = [("authorization", f"bearer {jwt}"), ("apns-topic", TOPIC), ("apns-push-type", "alert")]
    assert check(base).ok
    # Method is checked before anything else; duplicate headers before auth.
    assert check([], method="PUT").reason == "MethodNotAllowed"
    assert check(base + [("apns-topic", TOPIC)]).reason == "DuplicateHeaders"
    # The same token an hour later has expired.
    assert check(base, at=now + 3601).reason == "ExpiredProviderToken"
    assert auth.tokens_seen == 1


def test_client_without_alpn_speaking_h2_is_served(mock, keys):
    """aioapns offers no ALPN and works against APNs: the mock must serve HTTP/2 with prior knowledge too."""
    import socket
    import ssl

    import h2.config
    import h2.connection
    import h2.events
    ctx = ssl.create_default_context(cafile=mock.ca_file)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", mock.port), timeout=5), server_hostname="127.0.0.1")
    assert s.selected_alpn_protocol() is None
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "x"),
                          (":path", f"/3/device/{TOKEN}")], end_stream=True)
    s.sendall(conn.data_to_send())
    status = None
    while status is None:
        data = s.recv(65536)
        assert data
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers)[b":status"]
        s.sendall(conn.data_to_send())
    assert status == b"403"  # MissingProviderToken: the request was understood


def test_aioapns_passes_the_strict_mock(mock, keys, tmp_path):
    """A widely used real client must pass every check: guards against a mock stricter than Apple."""
    aioapns = pytest.importorskip("aioapns")
    import asyncio
    import ssl

    from aioapns.connection import APNsProductionClientProtocol
    from cryptography.hazmat.primitives import serialization
    pem = keys.key1.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()).decode()

    async def send() -> list:
        client = aioapns.APNs(key=pem, key_id=KID, team_id=TEAM, topic=TOPIC,
                              ssl_context=ssl.create_default_context(cafile=mock.ca_file))
        client.pool.protocol_class = type("Local", (APNsProductionClientProtocol,),
                                          {"APNS_SERVER": "127.0.0.1", "APNS_PORT": mock.port})
        results = await asyncio.gather(*(client.send_notification(aioapns.NotificationRequest(
            device_token=TOKEN, message={"aps": {"alert": f"n{i}"}}, priority=10, time_to_live=60,
            push_type=aioapns.PushType.ALERT)) for i in range(20)))
        client.pool.close()
        return results

    results = asyncio.run(send())
    assert [r.status for r in results] == ["200"] * 20, [(r.status, r.description) for r in results]
    assert mock.control("GET", "/stats")["refused_streams"] == 0  # it honoured the single first stream


def test_clock_offset_moves_the_mocks_now_for_token_rules(mock, client, keys):
    now = int(time.time())
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.key1, iat=now)).status == 200
    later = sign_jwt(keys.key1, iat=now + 3000)
    assert c.request(TOKEN, later).reason == "InvalidProviderToken"  # 50 minutes in the future
    mock.control("PUT", "/config", {"clock_offset_s": 3000})
    assert c.request(TOKEN, later).status == 200  # a refresh 50 minutes later on the same connection
    mock.control("PUT", "/config", {"clock_offset_s": 3000 + 3601})
    assert c.request(TOKEN, later).reason == "ExpiredProviderToken"


def test_control_api_lists_and_deletes_behaviours_and_filters_requests(mock, client, keys):
    mock.behave(TOKEN, status=429, reason="TooManyRequests")
    mock.behave("cd*", status=500, reason="InternalServerError", times=1)
    listed = mock.control("GET", "/behaviours")
    assert listed[TOKEN]["reason"] == "TooManyRequests" and listed["cd*"]["times"] == 1
    c, jwt = client(), sign_jwt(keys.key1)
    assert c.request(TOKEN, jwt).reason == "TooManyRequests"
    mock.control("DELETE", f"/behaviours/{TOKEN}")
    assert c.request(TOKEN, jwt).status == 200
    assert mock.control("GET", "/behaviours")["cd*"]["used"] == 0
    mock.control("DELETE", "/behaviours/cd*")
    assert c.request("cd" * 32, jwt).status == 200
    first = mock.requests()[0]["seq"]
    assert [r["status"] for r in mock.control("GET", f"/requests?since={first}")] == [200, 200]
    assert [r["token"] for r in mock.requests("cd" * 32)] == ["cd" * 32]
    mock.control("DELETE", "/behaviours")
    assert mock.control("GET", "/behaviours") == {}


@pytest.mark.parametrize("topic,push_type,reason", [
    ("com.example.app", "alert", None),
    ("com.example.app", "background", None),
    ("com.example.app.voip", "voip", None),
    ("com.example.app.complication", "complication", None),
    ("com.example.app.push-type.liveactivity", "liveactivity", None),
    ("com.example.app.location-query", "location", None),
    ("com.example.app.voip-ptt", "pushtotalk", None),
    ("com.example.app.pushkit.fileprovider", "fileprovider", None),
    ("com.example.app.push-type.widgets", "widgets", None),
    ("com.example.app.push-type.controls", "controls", None),
    ("com.example.app", "mdm", None),
    ("com.example.app.voip", "liveactivity", "DeviceTokenNotForTopic"),
    ("com.example.ap", "alert", "BadTopic"),
    ("com.example.app.unknown", "alert", "BadTopic"),
])
def test_topic_rule_without_sockets(topic, push_type, reason):
    verdict = apns_rules.check_topic(topic, push_type, frozenset(["com.example.app"]))
    assert verdict.reason == reason


@pytest.mark.parametrize("push_type,priority,payload,reason", [
    ("alert", 10, {"aps": {"alert": {"title": "t"}}}, None),
    ("alert", 5, {"aps": {"sound": "default"}}, None),
    ("alert", 10, {"aps": {"badge": 0, "content-available": 1}}, None),
    ("alert", 10, {"data": 1}, "InvalidPushType"),
    ("background", 5, {"aps": {"content-available": 1}, "data": 1}, None),
    ("background", 1, {"aps": {"content-available": 1}}, None),
    ("background", 5, {"aps": {"content-available": True}}, "InvalidPushType"),
    ("background", 5, {"aps": {"content-available": 1, "sound": "x"}}, "InvalidPushType"),
    ("background", 10, {"aps": {"content-available": 1}}, "BadPriority"),
    ("voip", 10, {"anything": 1}, None),
])
def test_push_type_payload_rule_without_sockets(push_type, priority, payload, reason):
    assert apns_rules.check_push_type_payload(push_type, priority, payload).reason == reason


def test_connection_auth_state_without_sockets(keys):
    ring = KeyRing(TEAM, {KID: keys.key1.public_key(), KID2: keys.key2.public_key()})
    auth = ConnectionAuth()
    now = 1_800_000_000.0
    t1 = ring.verify(sign_jwt(keys.key1, iat=int(now)))
    assert auth.admit("jwt-1", t1, now).ok and auth.bound_kid == KID
    assert auth.admit("jwt-1", t1, now + 3000).ok  # the same token is reused freely until it expires
    t2 = ring.verify(sign_jwt(keys.key1, iat=int(now) + 1199))
    assert auth.admit("jwt-2", t2, now + 1199).reason == "TooManyProviderTokenUpdates"
    assert auth.current_jwt == "jwt-1"
    t3 = ring.verify(sign_jwt(keys.key1, iat=int(now) + 1200))
    assert auth.admit("jwt-3", t3, now + 1200).ok and auth.tokens_seen == 2
    other = ring.verify(sign_jwt(keys.key2, kid=KID2, iat=int(now) + 3000))
    assert auth.admit("jwt-4", other, now + 3000).reason == "UnrelatedKeyIdInToken"


def test_idle_connection_gets_goaway_idle_timeout(mock, client, keys):
    mock.control("PUT", "/config", {"idle_timeout_s": 0.3})
    c = client()
    assert c.request(TOKEN, sign_jwt(keys.key1)).status == 200
    start = time.monotonic()
    while c.goaway is None and c.pump(3):
        pass
    assert c.goaway is not None and json.loads(c.goaway.additional_data) == {"reason": "IdleTimeout"}
    assert c.goaway.last_stream_id == 1 and time.monotonic() - start >= 0.2
    while c.pump(2):
        pass
    assert c.closed


def test_pings_keep_a_connection_from_idling(mock, client, keys):
    mock.control("PUT", "/config", {"idle_timeout_s": 0.4})
    c, jwt = client(), sign_jwt(keys.key1)
    assert c.request(TOKEN, jwt).status == 200
    for _ in range(5):  # 1 s of PINGs only, 0.2 s apart: any frame counts as activity
        c.conn.ping(b"12345678")
        c._flush()
        c.pump(0.2)  # reads the PING ACK
        time.sleep(0.2)
    assert c.goaway is None and not c.closed
    assert c.request(TOKEN, jwt).status == 200  # still usable


# MARK: - Connection faults by answer count, jitter, lingering close


def _auth(c, keys):
    """Authenticates a connection (one stream until then) and returns the JWT used."""
    jwt = sign_jwt(keys.key1)
    assert c.request(TOKEN, jwt).status == 200
    return jwt


def test_goaway_after_n_answers_covers_every_stream_received_then_refuses_new_ones(mock, client, keys):
    mock.control("PUT", "/config", {"goaway_after": 3, "delay_ms": 100})
    c = client()
    jwt = _auth(c, keys)
    tokens = [f"{n:02x}" * 32 for n in range(1, 5)]
    sids = [c.send(t, jwt) for t in tokens]  # all received before the third answer triggers GOAWAY
    time.sleep(0.5)  # answers and GOAWAY are on their way; this client has not read them yet
    # A stream opened before the client read the GOAWAY is above its last-stream-id: refused, not processed.
    late = c.send("ee" * 32, jwt)
    rs = c.wait(*sids, late)
    assert c.goaway is not None and c.goaway.last_stream_id == sids[-1]
    assert json.loads(c.goaway.additional_data) == {"reason": "Shutdown"}
    assert [r.status for r in rs[:-1]] == [200] * 4, "streams up to last-stream-id are answered"
    assert rs[-1].reset == h2.errors.ErrorCodes.REFUSED_STREAM and rs[-1].status is None
    stats = mock.control("GET", "/stats")
    assert stats["goaways_sent"] == 1 and stats["unanswered"] == 0
    assert all(stats["sent_per_token"][t] == {"200": 1} for t in tokens)
    assert "ee" * 32 not in stats["sent_per_token"]


def test_drop_after_n_answers_cuts_the_requests_in_flight(mock, client, keys):
    mock.control("PUT", "/config", {"drop_after": 2})
    slow = ["c1" * 32, "c2" * 32]
    for t in slow:
        mock.behave(t, delay_ms=1000)
    c = client()
    jwt = _auth(c, keys)  # answer 1
    sids = [c.send(t, jwt) for t in slow]
    fast = c.send("c3" * 32, jwt)  # answer 2: the connection is aborted 50 ms later
    rs = c.wait(fast, *sids, timeout=3)
    assert rs[0].status == 200
    assert [r.status for r in rs[1:]] == [None, None] and c.closed
    time.sleep(1.2)  # the slow answers come due on a closed connection: counted as unanswered
    stats = mock.control("GET", "/stats")
    assert stats["connections_dropped"] == 1 and stats["unanswered"] == 2
    assert all(t not in stats["sent_per_token"] for t in slow)
    assert stats["per_token"][slow[0]] == {"200": 1}, "per_token counts the decision, sent_per_token the answer"


def test_answer_then_drop_answers_and_resets_the_connection(mock, client, keys):
    mock.behave(TOKEN, action="answer_then_drop", times=1)
    c = client()
    r = c.request(TOKEN, sign_jwt(keys.key1))
    assert r.status == 200
    while c.pump(2):
        pass
    assert c.closed and c.goaway is None
    assert mock.control("GET", "/stats")["sent_per_token"][TOKEN] == {"200": 1}


def test_delay_jitter_spreads_answers(mock, client, keys):
    mock.control("PUT", "/config", {"delay_jitter_ms": 300})
    c = client()
    jwt = _auth(c, keys)
    start = time.monotonic()
    sids = [c.send(f"{n:02x}" * 32, jwt) for n in range(16, 28)]
    answered: dict[int, float] = {}
    while len(answered) < len(sids) and c.pump(3):
        for s in sids:
            if s not in answered and c.responses[s].ended:
                answered[s] = time.monotonic() - start
    assert len(answered) == len(sids) and max(answered.values()) < 2
    assert max(answered.values()) - min(answered.values()) > 0.02


def test_graceful_close_lingers_so_answers_written_are_not_lost(mock, client, keys):
    mock.control("PUT", "/config", {"goaway_after": 2})
    c = client()
    jwt = _auth(c, keys)
    last = c.send("ab" * 32, jwt)  # answer 2, then GOAWAY: nothing left in flight, the mock closes
    time.sleep(0.3)
    # Bytes still arriving after the GOAWAY (a stream opened before reading it) get an HTTP/2 answer, not a TCP
    # reset that would also discard the answer still unread in this client's socket.
    sid = c.send("cd" * 32, jwt)
    r_last, r_late = c.wait(last, sid)
    assert r_last.status == 200 and c.goaway is not None
    assert r_late.reset == h2.errors.ErrorCodes.REFUSED_STREAM
    start = time.monotonic()
    while c.pump(3):
        pass
    assert c.closed and time.monotonic() - start < 2.5


def test_goaway_to_every_connection_answers_what_is_in_flight_then_closes(mock, client, keys):
    mock.control("PUT", "/config", {"delay_ms": 200})
    c = client()
    jwt = _auth(c, keys)
    sid = c.send("ab" * 32, jwt)
    time.sleep(0.05)  # received, not answered yet
    assert mock.control("POST", "/connections/goaway") == {"connections": 1}
    assert c.wait(sid)[0].status == 200
    while c.pump(3):
        pass
    assert c.goaway is not None and c.goaway.last_stream_id == sid and c.closed
    assert mock.control("GET", "/stats")["connections_open"] == 0


def test_config_rejects_unknown_floor_scope_and_negative_counts(mock):
    import http.client
    for body in ({"token_floor_scope": "team"}, {"goaway_after": -1}, {"drop_after": -2}, {"delay_jitter_ms": -5}):
        conn = http.client.HTTPConnection("127.0.0.1", mock.control_port, timeout=5)
        conn.request("PUT", "/config", body=json.dumps(body))
        assert conn.getresponse().status == 400, body


# MARK: - The refresh floor per key


@pytest.fixture
def key_floor_mock(keys):
    m = Mock(["--team-id", TEAM, "--key", f"{KID}={keys.pub1}", "--key", f"{KID2}={keys.pub2}", "--topic", TOPIC,
              "--token-floor-scope", "key"])
    yield m
    m.stop()


def test_key_floor_refuses_a_new_token_for_the_key_on_any_connection_within_20_minutes(key_floor_mock, keys):
    m = key_floor_mock
    now = int(time.time())
    first = sign_jwt(keys.key1, iat=now - 100)
    a = H2Client(m)
    assert a.request(TOKEN, first).status == 200
    b = H2Client(m)  # a restarted process: new connection, new token
    r = b.request(TOKEN, sign_jwt(keys.key1, iat=now))
    assert (r.status, r.reason) == (429, "TooManyProviderTokenUpdates")
    assert b.request(TOKEN, first).status == 200, "the token APNs knows works on every connection"
    # Another key has its own floor.
    assert H2Client(m).request(TOKEN, sign_jwt(keys.key2, kid=KID2, iat=now)).status == 200
    # The floor outlives POST /reset, like connection state.
    m.control("POST", "/reset")
    m.control("PUT", "/config", {"token_floor_scope": "key", "clock_offset_s": 1200})
    r = H2Client(m).request(TOKEN, sign_jwt(keys.key1, iat=now + 1099))
    assert (r.status, r.reason) == (429, "TooManyProviderTokenUpdates")
    assert H2Client(m).request(TOKEN, sign_jwt(keys.key1, iat=now + 1100)).status == 200, "20 minutes after the first"
    for c in (a, b):
        c.close()


def test_key_floor_rule_without_sockets(keys):
    ring = KeyRing(TEAM, {KID: keys.key1.public_key(), KID2: keys.key2.public_key()})
    floor = apns_rules.KeyTokenFloor()
    now = 1_800_000_000
    t1 = ring.verify(sign_jwt(keys.key1, iat=now))
    t2 = ring.verify(sign_jwt(keys.key1, iat=now + 1199))
    t3 = ring.verify(sign_jwt(keys.key1, iat=now + 1200))
    assert floor.admit("jwt-1", t1)
    assert not floor.admit("jwt-2", t2)
    assert floor.admit("jwt-1", t1), "an accepted token stays accepted"
    assert floor.admit("jwt-3", t3) and floor.admit("jwt-1", t1)
    assert floor.newest_iat[KID] == now + 1200
    auth = ConnectionAuth()
    assert auth.admit("jwt-2", t2, now + 1199, floor).reason == "TooManyProviderTokenUpdates"
    assert auth.current_jwt is None, "a refused token does not become the connection's token"
