"""Tests of the strict mock APNs' broadcast channel APIs (apns_broadcast.py) over real TLS + HTTP/2."""

from __future__ import annotations

import base64
import json

import pytest

import apns_broadcast
from mock_apns_testkit import TOPIC, H2Client, sign_jwt
from mock_apns_testkit import _reset, client, keys, mock  # noqa: F401  (fixtures)

MANAGE = f"/1/apps/{TOPIC}/channels"
LIST = f"/1/apps/{TOPIC}/all-channels"
SEND = f"/4/broadcasts/apps/{TOPIC}"
UPDATE = {"aps": {"event": "update", "timestamp": 1_700_000_000, "content-state": {"score": 1}}}


def manage(c: H2Client, jwt: str, method: str, path: str = MANAGE, body: bytes = b"",
           extra: list[tuple[str, str]] | None = None):
    return c.request("", jwt, method=method, path=path, body=body, topic=None, push_type=None, extra=extra)


def create(c: H2Client, jwt: str, policy: int = 1) -> str:
    r = manage(c, jwt, "POST", body=json.dumps({"message-storage-policy": policy, "push-type": "LiveActivity"}).encode())
    assert r.status == 201, r.body
    return r.headers["apns-channel-id"]


def send(c: H2Client, jwt: str, channel: str | None, payload=UPDATE, push_type: str | None = "liveactivity",
         priority: str | None = "5", expiration: str | None = "0", extra=None, body: bytes | None = None):
    headers = list(extra or [])
    if channel is not None:
        headers.append(("apns-channel-id", channel))
    if expiration is not None:
        headers.append(("apns-expiration", expiration))
    return c.request("", jwt, method="POST", path=SEND, payload=payload, body=body, topic=None, push_type=push_type,
                     priority=priority, extra=headers)


def test_create_read_list_delete_round_trip(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt, policy=0)
    assert apns_broadcast.valid_channel_id(channel) and channel.startswith("+/") and channel.endswith("==")
    r = manage(c, jwt, "GET", extra=[("apns-channel-id", channel)])
    assert (r.status, r.json) == (200, {"message-storage-policy": 0, "push-type": "LiveActivity"})
    assert manage(c, jwt, "GET", path=LIST).json == {"channels": [channel]}
    assert mock.control("GET", "/channels") == [{"bundle": TOPIC, "environment": "sandbox", "channel": channel,
                                                 "message_storage_policy": 0}]
    r = manage(c, jwt, "DELETE", extra=[("apns-channel-id", channel)])
    assert r.status == 204 and r.body == b""
    r = manage(c, jwt, "GET", extra=[("apns-channel-id", channel)])
    assert (r.status, r.reason) == (400, "ChannelNotRegistered")
    assert manage(c, jwt, "GET", path=LIST).json == {"channels": []}


def test_request_id_is_echoed_or_generated(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    given = "0c3a5f2e-1b2c-4d5e-8f90-123456789abc"
    assert manage(c, jwt, "GET", path=LIST, extra=[("apns-request-id", given)]).headers["apns-request-id"] == given
    assert len(manage(c, jwt, "GET", path=LIST).headers["apns-request-id"]) == 36
    r = manage(c, jwt, "GET", path=LIST, extra=[("apns-request-id", "nope")])
    assert (r.status, r.reason) == (400, "BadRequestParams")


@pytest.mark.parametrize("body", [
    b"", b"not json", b"[]", b'{"message-storage-policy": 2, "push-type": "LiveActivity"}',
    b'{"message-storage-policy": true, "push-type": "LiveActivity"}', b'{"message-storage-policy": 0}',
    b'{"message-storage-policy": 0, "push-type": "alert"}',
    b'{"message-storage-policy": 0, "push-type": "LiveActivity", "x": 1}',
])
def test_create_with_bad_body_is_bad_request_params(client, keys, body):
    r = manage(client(), sign_jwt(keys.key1), "POST", body=body)
    assert (r.status, r.reason) == (400, "BadRequestParams")


def test_channel_cap_answers_cannot_create_channel_config(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    mock.control("PUT", "/broadcast/config", {"channel_cap": 2})
    create(c, jwt)
    create(c, jwt)
    r = manage(c, jwt, "POST", body=b'{"message-storage-policy": 1, "push-type": "LiveActivity"}')
    assert (r.status, r.reason) == (400, "CannotCreateChannelConfig")


def test_default_cap_is_apples_ten_thousand():
    assert apns_broadcast.BroadcastConfig().channel_cap == 10_000


@pytest.mark.parametrize("method,path,status,reason", [
    ("PUT", MANAGE, 405, "MethodNotAllowed"),
    ("POST", LIST, 405, "MethodNotAllowed"),
    ("GET", f"/1/apps/{TOPIC}/channel", 404, "BadPath"),
    ("GET", f"/1/apps/{TOPIC}/channels?x=1", 404, "BadPath"),
    ("GET", SEND, 405, "MethodNotAllowed"),
    ("POST", SEND + "/x", 404, "BadPath"),
])
def test_bad_method_or_path(client, keys, method, path, status, reason):
    r = manage(client(), sign_jwt(keys.key1), method, path=path)
    assert (r.status, r.reason) == (status, reason)


def test_provider_token_is_checked_like_the_device_path(client, keys):
    c = client()
    assert manage(c, None, "GET", path=LIST).reason == "MissingProviderToken"
    assert manage(c, "a.b.c", "GET", path=LIST).reason == "InvalidProviderToken"
    assert manage(client(), sign_jwt(keys.key1, iat=0), "GET", path=LIST).reason == "ExpiredProviderToken"


def test_bundle_outside_the_team_is_topic_mismatch(client, keys):
    r = manage(client(), sign_jwt(keys.key1), "GET", path="/1/apps/com.unknown.app/all-channels")
    assert (r.status, r.reason) == (403, "TopicMismatch")


def test_feature_switched_off_answers_feature_not_enabled(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt)
    mock.control("PUT", "/broadcast/config", {"enabled": False})
    assert manage(c, jwt, "GET", path=LIST).reason == "FeatureNotEnabled"
    assert send(c, jwt, channel).reason == "FeatureNotEnabled"


def test_read_and_delete_need_a_valid_known_channel_id(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    assert manage(c, jwt, "DELETE").reason == "MissingChannelId"
    for bad in ["abc", "a" * 300, "ab=c", "a_b-"]:
        assert manage(c, jwt, "DELETE", extra=[("apns-channel-id", bad)]).reason == "BadChannelId", bad
    unknown = base64.b64encode(b"unknown-channel!").decode()
    assert manage(c, jwt, "DELETE", extra=[("apns-channel-id", unknown)]).reason == "ChannelNotRegistered"


def test_broadcast_accepted_and_recorded(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt)
    r = send(c, jwt, channel, extra=[("apns-request-id", "0c3a5f2e-1b2c-4d5e-8f90-123456789abc")])
    assert r.status == 200 and r.headers["apns-request-id"] == "0c3a5f2e-1b2c-4d5e-8f90-123456789abc"
    [recorded] = mock.control("GET", "/broadcasts")
    assert recorded["channel"] == channel and recorded["payload"] == UPDATE
    assert recorded["headers"]["apns-push-type"] == "liveactivity" and "authorization" not in recorded["headers"]
    assert send(c, jwt, channel, push_type="LiveActivity").status == 200  # Apple's tables capitalise it


def test_broadcast_check_order(mock, client, keys):
    """Each request breaks every rule from one point on: the first broken rule in Apple's order answers."""
    c, jwt = client(), sign_jwt(keys.key1)
    stored = create(c, jwt, policy=0)
    unknown = base64.b64encode(b"unknown-channel!").decode()
    big = {"aps": dict(UPDATE["aps"], pad="x" * 5200)}
    cases = [
        (dict(channel=None, push_type=None), "MissingChannelId"),
        (dict(channel="abc", push_type=None), "BadChannelId"),
        (dict(channel=unknown, push_type=None, priority="7"), "MissingPushType"),
        (dict(channel=unknown, push_type="alert", priority="7"), "InvalidPushType"),
        (dict(channel=unknown, expiration="soon", priority="7"), "BadExpirationDate"),
        (dict(channel=stored, expiration="1900000000", priority="7"), "BadExpirationDate"),
        (dict(channel=unknown, priority="7", body=b""), "BadPriority"),
        (dict(channel=unknown, body=b""), "ChannelNotRegistered"),
        (dict(channel=stored, body=b""), "PayloadEmpty"),
        (dict(channel=stored, payload=big), "PayloadTooLarge"),
        (dict(channel=stored, payload={"aps": {"event": "start", "timestamp": 1, "content-state": {}}}), "BadRequestPayload"),
        (dict(channel=stored, payload={"aps": {"event": "update", "content-state": {}}}), "BadRequestPayload"),
        (dict(channel=stored, payload={"aps": {"event": "update", "timestamp": 1}}), "BadRequestPayload"),
    ]
    for kwargs, reason in cases:
        r = send(c, jwt, **kwargs)
        assert r.reason == reason, (kwargs, r.status, r.body)
    assert send(c, jwt, stored, payload={"aps": {"event": "end", "timestamp": 1}}).status == 200
    assert mock.control("GET", "/broadcasts")[-1]["payload"]["aps"]["event"] == "end"


def test_broadcast_with_topic_is_refused(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt)
    r = send(c, jwt, channel, extra=[("apns-topic", TOPIC)])
    assert (r.status, r.reason) == (400, "BadRequestParams")


def test_payload_of_5120_bytes_is_accepted_5121_refused(client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt)
    base = json.dumps({"aps": dict(UPDATE["aps"], pad="")}).encode()
    body = json.dumps({"aps": dict(UPDATE["aps"], pad="x" * (5120 - len(base)))}).encode()
    assert len(body) == 5120
    assert send(c, jwt, channel, body=body).status == 200
    assert send(c, jwt, channel, body=body[:-2] + b'x"}}').reason == "PayloadTooLarge"


def test_behaviour_per_channel_then_accepted(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    channel = create(c, jwt)
    mock.behave("broadcast:" + channel, status=500, reason="InternalServerError", times=1)
    assert (send(c, jwt, channel).status, mock.control("GET", "/broadcasts")) == (500, [])
    assert send(c, jwt, channel).status == 200
    assert len(mock.control("GET", "/broadcasts")) == 1


def test_reset_forgets_channels_and_broadcast_config(mock, client, keys):
    c, jwt = client(), sign_jwt(keys.key1)
    create(c, jwt)
    mock.control("PUT", "/broadcast/config", {"enabled": False})
    mock.control("POST", "/reset")
    assert mock.control("GET", "/channels") == []
    assert manage(c, jwt, "GET", path=LIST).json == {"channels": []}


def test_valid_channel_id_rules_without_sockets():
    assert apns_broadcast.valid_channel_id("dHN0LXNyY2gtY2hubA==")
    assert apns_broadcast.valid_channel_id("+/8AAAAAAAAAAAAAAAAAAA==")
    for bad in ["", "dHN0LXNyY2gtY2hubA", "dHN0LXNyY2gtY2hubA=", "dHN0-XNyY2gtY2hubA==", "a" * 260 + "==="]:
        assert not apns_broadcast.valid_channel_id(bad), bad


@pytest.mark.parametrize("body", [{"enabled": False, "channel_cap": -1}, {"enabled": "no", "channel_cap": 3},
                                  {"enabled": False, "channel_cap": "x"}])
def test_a_refused_config_change_changes_nothing(body):
    state = apns_broadcast.BroadcastState()
    with pytest.raises(ValueError):
        state.apply_config(body)
    assert state.config == apns_broadcast.BroadcastConfig(), "part of a refused change was applied"
