"""Broadcast channels (iOS 18) end to end: the release binary against the strict mock APNs (Tests/Support/
apns_broadcast.py). Channel management through the server's API, publishes to channels stored and sent by the
durable engine (one request per channel at the mock, retried, resumed after kill -9), failures reported with
Apple's reason, hostile input refused with Beams-style errors before anything is stored or sent."""
import json
import signal
import time
import urllib.parse

import pytest
import requests

from beams import Beams, wait_for
from harness import INSTANCE_ID, KEY_ID, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET, SECRET, TEAM_ID, TOPIC

BASE = f"/publish_api/v1/instances/{INSTANCE_ID}"
UPDATE = {"aps": {"event": "update", "content-state": {"score": "2-1"}, "alert": {"title": "Goal", "body": "2-1"}}}


class Channels:
    """The channel routes of one instance, over the client's keep-alive session."""

    def __init__(self, client: Beams, secret=SECRET, instance_id=INSTANCE_ID):
        self.client, self.secret, self.instance_id = client, secret, instance_id

    def call(self, method, path="", body=None, data=None, secret=None, content_type="application/json", base=None):
        headers = {"Authorization": f"Bearer {secret or self.secret}"}
        if body is not None or data is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body) if body is not None else data
        url = self.client.server.url((base or f"/publish_api/v1/instances/{self.instance_id}/channels") + path)
        return self.client.session.request(method, url, data=data, headers=headers, timeout=30)

    def create(self, policy=None):
        r = self.call("POST", body={} if policy is None else {"messageStoragePolicy": policy})
        assert r.status_code == 201, r.text
        return r.json()["channelId"]

    def path(self, channel):
        return "/" + urllib.parse.quote(channel, safe="")

    def publish(self, body):
        return self.call("POST", body=body, base=f"/publish_api/v1/instances/{self.instance_id}/publishes/channels")


def control(mock, method, path, body=None):
    r = requests.request(method, f"{mock.control}{path}", json=body, timeout=5)
    assert r.status_code == 200, r.text
    return r.json()


def broadcasts(mock, channel=None):
    return [b for b in control(mock, "GET", "/broadcasts") if channel is None or b["channel"] == channel]


def broadcast_requests(mock, channel):
    """Every broadcast request the mock decided on for `channel` (accepted or not)."""
    return [r for r in mock.requests() if r["path"].startswith("/4/broadcasts/") and r["token"] == f"broadcast:{channel}"]


def assert_beams_error(response, status, fragment=None):
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error", "description"}, body
    if fragment:
        assert fragment in body["description"], body
    return body


@pytest.fixture()
def setup(env):
    server, mock = env
    mock.reset()
    client = Beams(server)
    return server, mock, client, Channels(client)


# MARK: - Channel management


def test_create_list_read_and_delete_a_channel(setup):
    server, mock, client, channels = setup
    kept = channels.create(policy=1)
    r = channels.call("POST", body={"messageStoragePolicy": 0})
    assert r.status_code == 201, r.text
    created = r.json()
    channel = created["channelId"]
    assert created["messageStoragePolicy"] == 0
    assert "/" in channel and "+" in channel and channel.endswith("=="), "the mock's ids need encoding in a path"
    assert created["channelIdUrlSafe"] == channel.replace("+", "-").replace("/", "_").rstrip("=")

    listed = channels.call("GET")
    assert listed.status_code == 200, listed.text
    assert sorted(listed.json()["channels"]) == sorted([kept, channel])

    for form in (channels.path(channel), "/" + created["channelIdUrlSafe"]):
        r = channels.call("GET", form)
        assert r.status_code == 200, (form, r.text)
        assert r.json() == {"channelId": channel, "channelIdUrlSafe": created["channelIdUrlSafe"],
                            "messageStoragePolicy": 0, "pushType": "LiveActivity"}

    r = channels.call("DELETE", "/" + created["channelIdUrlSafe"])
    assert r.status_code == 204 and r.content == b"", r.text
    assert_beams_error(channels.call("GET", channels.path(channel)), 404, "ChannelNotRegistered")
    assert_beams_error(channels.call("DELETE", channels.path(channel)), 404, "ChannelNotRegistered")
    assert channels.call("GET").json()["channels"] == [kept]
    # Apple's shapes at the mock: the same provider token as the device path, the id in a header.
    deletes = [r for r in mock.requests() if r["method"] == "DELETE"]
    assert deletes[0]["headers"]["apns-channel-id"] == channel
    assert deletes[0]["jwt"] == {"kid": KEY_ID, "iss": TEAM_ID, "iat": deletes[0]["jwt"]["iat"]}


def test_apns_refusing_is_502_with_apples_reason(setup):
    server, mock, client, channels = setup
    control(mock, "PUT", "/broadcast/config", {"enabled": False})
    body = assert_beams_error(channels.call("POST", body={}), 502, "FeatureNotEnabled")
    assert "Broadcast Capability" in body["description"]
    assert_beams_error(channels.call("GET"), 502, "FeatureNotEnabled")
    control(mock, "PUT", "/broadcast/config", {"enabled": True, "channel_cap": 1})
    channels.create()
    assert_beams_error(channels.call("POST", body={}), 502, "CannotCreateChannelConfig")


def test_apns_unreachable_is_503_and_an_instance_without_credentials_409(environment, tmp_path):
    mock = environment.mock()
    closed = "https://127.0.0.1:1"
    server = environment.server(mock, instance_overrides={"apns": {
        "teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(environment.p8), "topic": TOPIC,
        "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{mock.port}", "caFile": mock.ca_file,
        "broadcast": {"managementUrl": closed, "sendUrl": closed}}}, name="unreachable")
    client = Beams(server)
    channels = Channels(client)
    assert_beams_error(channels.call("GET"), 503, "could not be reached")
    assert_beams_error(channels.call("POST", body={"messageStoragePolicy": 1}), 503)
    none = Channels(Beams(server, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET), NO_CREDENTIALS_SECRET,
                    NO_CREDENTIALS_INSTANCE_ID)
    assert_beams_error(none.call("GET"), 409, "no APNs credentials")
    assert control(mock, "GET", "/channels") == []


# MARK: - Publishing to channels


def test_publish_to_a_channel_sends_one_request_with_the_server_timestamp(setup):
    server, mock, client, channels = setup
    channel = channels.create(policy=0)
    before = int(time.time())
    r = channels.publish({"channels": [channel], "apns": UPDATE})
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    assert set(r.json()) == {"publishId"}
    status = client.wait_finished(publish_id)
    [sent] = broadcasts(mock, channel)
    aps = sent["payload"]["aps"]
    assert before <= aps.pop("timestamp") <= int(time.time())
    assert sent["payload"] == {"aps": UPDATE["aps"]}
    assert sent["path"] == f"/4/broadcasts/apps/{TOPIC}"
    headers = sent["headers"]
    assert (headers["apns-priority"], headers["apns-expiration"], headers["apns-push-type"]) == ("5", "0", "liveactivity")
    assert "apns-topic" not in headers
    assert status["kind"] == "channels" and status["targets"] == 1
    assert status["broadcast"] == {"accepted": 1, "failed": 0, "failedByReason": {},
                                   "channels": {channel: {"status": "accepted", "attempts": 1}}}
    assert [p["publishId"] for p in client.recent(5)][0] == publish_id


def test_publish_to_several_channels_with_priority_expiration_and_end(setup):
    server, mock, client, channels = setup
    stored, other = channels.create(policy=1), channels.create(policy=1)
    expiration = int(time.time()) + 3600
    body = {"channels": [stored, other, stored], "apns": {"aps": {"event": "end", "dismissal-date": 0}},
            "x_live_activity": {"priority": 10, "expiration": expiration}}
    status = client.wait_finished(channels.publish(body).json()["publishId"])
    assert status["broadcast"]["accepted"] == 2 and status["targets"] == 2  # the repeated channel is sent once
    for channel in (stored, other):
        [sent] = broadcasts(mock, channel)
        assert sent["headers"]["apns-priority"] == "10"
        assert sent["headers"]["apns-expiration"] == str(expiration)
        assert sent["payload"]["aps"]["event"] == "end"


def test_retried_after_a_500_and_a_dropped_connection(setup):
    server, mock, client, channels = setup
    failing, dropped = channels.create(), channels.create()
    mock.behave(f"broadcast:{failing}", status=500, reason="InternalServerError", times=2)
    mock.behave(f"broadcast:{dropped}", status=200, action="drop", times=1)
    publish_id = channels.publish({"channels": [failing, dropped], "apns": UPDATE}).json()["publishId"]
    status = client.wait_finished(publish_id)
    assert status["broadcast"]["channels"] == {failing: {"status": "accepted", "attempts": 3},
                                               dropped: {"status": "accepted", "attempts": 2}}
    assert [r["status"] for r in broadcast_requests(mock, failing)] == [500, 500, 200]
    assert len(broadcasts(mock, failing)) == 1 and len(broadcasts(mock, dropped)) == 1


def test_unknown_channel_is_reported_with_apples_reason_and_not_retried(setup):
    server, mock, client, channels = setup
    good = channels.create()
    unknown = "dW5rbm93bi1jaGFubmVsIQ=="
    publish_id = channels.publish({"channels": [unknown, good], "apns": UPDATE}).json()["publishId"]
    status = client.wait_finished(publish_id)
    assert status["broadcast"] == {
        "accepted": 1, "failed": 1, "failedByReason": {"ChannelNotRegistered": 1},
        "channels": {unknown: {"status": "failed", "reason": "ChannelNotRegistered", "attempts": 1},
                     good: {"status": "accepted", "attempts": 1}}}
    assert len(broadcast_requests(mock, unknown)) == 1


def test_nonzero_expiration_on_a_no_storage_channel_reports_bad_expiration_date(setup):
    server, mock, client, channels = setup
    channel = channels.create(policy=0)
    body = {"channels": [channel], "apns": UPDATE, "x_live_activity": {"expiration": int(time.time()) + 60}}
    status = client.wait_finished(channels.publish(body).json()["publishId"])
    assert status["broadcast"]["failedByReason"] == {"BadExpirationDate": 1}
    assert broadcasts(mock, channel) == []


def test_durable_across_kill_9_while_the_broadcast_is_in_flight(environment):
    mock = environment.mock()
    server = environment.server(mock, {"engine": {"leaseSeconds": 5}}, name="kill9")
    client = Beams(server)
    channels = Channels(client)
    channel = channels.create()
    # The first attempt gets no answer for a minute: the server is killed while it waits.
    mock.behave(f"broadcast:{channel}", status=200, delay_ms=60_000, times=1)
    publish_id = channels.publish({"channels": [channel], "apns": UPDATE}).json()["publishId"]
    wait_for(lambda: broadcast_requests(mock, channel), timeout=20)
    server.kill9()
    assert broadcasts(mock, channel) == []
    server.start()
    status = client.wait_finished(publish_id, timeout=60)
    assert status["attempts"] == 2, status
    assert status["broadcast"]["channels"] == {channel: {"status": "accepted", "attempts": 1}}
    assert len(broadcasts(mock, channel)) == 1
    assert len(broadcast_requests(mock, channel)) == 2


# MARK: - Hostile input and authorization


BAD_IDS = ["abcde", "a" * 300, "ab%3Dc", "%00%01%02%03", "..", "%2E%2E%2F%2E%2E", "ab%0D%0Acd", "a+-b", "%C3%A9abc",
           "YWJj%20ZA%3D%3D"]


def test_hostile_channel_ids_in_paths_are_400_and_never_reach_apns(setup):
    server, mock, client, channels = setup
    for bad in BAD_IDS:
        for method in ("GET", "DELETE"):
            r = channels.call(method, "/" + bad)
            assert r.status_code in (400, 404), (bad, method, r.status_code, r.text)
            assert set(r.json()) == {"error", "description"}, r.text
    assert [r["headers"].get("apns-channel-id") for r in mock.requests() if r["path"].startswith("/1/")] == []


@pytest.mark.parametrize("data,content_type,status,fragment", [
    ("not json", "application/json", 400, "JSON object"),
    ("[]", "application/json", 400, "JSON object"),
    ('{"messageStoragePolicy": 2}', "application/json", 422, "messageStoragePolicy"),
    ('{"messageStoragePolicy": "1"}', "application/json", 422, "messageStoragePolicy"),
    ('{"messageStoragePolicy": 1.5}', "application/json", 422, "messageStoragePolicy"),
    ('{"policy": 1}', "application/json", 422, "Unknown member"),
    ('{"messageStoragePolicy": 1}', "text/plain", 400, "application/json"),
    ("{" + '"a":1,' * 400 + '"b":1}', "application/json", 400, "too large"),
])
def test_hostile_create_bodies(setup, data, content_type, status, fragment):
    server, mock, client, channels = setup
    assert_beams_error(channels.call("POST", data=data, content_type=content_type), status, fragment)
    assert control(mock, "GET", "/channels") == []


def hostile_publishes(channel):
    big = {"aps": dict(UPDATE["aps"], **{"content-state": {"pad": "x" * 5200}})}
    return [
        ({"apns": UPDATE}, "`channels`"),
        ({"channels": [], "apns": UPDATE}, "at least 1"),
        ({"channels": "x", "apns": UPDATE}, "`channels`"),
        ({"channels": [channel] * 2 + ["YWJjZA=="] * 100, "apns": UPDATE}, "at most 100"),
        ({"channels": [7], "apns": UPDATE}, "`channels.0`"),
        ({"channels": ["not base64!"], "apns": UPDATE}, "`channels.0`"),
        ({"channels": [channel]}, "`apns`"),
        ({"channels": [channel], "apns": {"aps": {"event": "start", "content-state": {}, "attributes-type": "A",
                                                   "attributes": {}, "alert": "x"}}}, "broadcast cannot start a Live Activity"),
        ({"channels": [channel], "apns": {"aps": {"event": "update"}}}, "content-state"),
        ({"channels": [channel], "apns": {"aps": {"event": "update", "content-state": {}, "timestamp": 1}}}, "timestamp"),
        ({"channels": [channel], "apns": {"aps": {"event": "pause", "content-state": {}}}}, "event"),
        ({"channels": [channel], "apns": {"aps": {"event": "update", "content-state": {}, "sound": "x"}}}, "sound"),
        ({"channels": [channel], "apns": {"aps": {"event": "update", "content-state": 3}}}, "content-state"),
        ({"channels": [channel], "apns": dict(UPDATE, data={"x": 1})}, "apns.data"),
        ({"channels": [channel], "apns": UPDATE, "x_live_activity": {"priority": 7}}, "priority"),
        ({"channels": [channel], "apns": UPDATE, "x_live_activity": {"expiration": -1}}, "expiration"),
        ({"channels": [channel], "apns": UPDATE, "x_live_activity": {"expiration": "soon"}}, "expiration"),
        ({"channels": [channel], "apns": UPDATE, "x_live_activity": {"expiration": 99_999_999_999}}, "expiration"),
        ({"channels": [channel], "apns": UPDATE, "x_live_activity": {"ttl": 1}}, "Unknown member"),
        ({"channels": [channel], "apns": UPDATE, "interests": ["a"]}, "Unknown member"),
        ({"channels": [channel], "apns": big}, "5120"),
    ]


def test_hostile_publishes_are_422_and_nothing_is_stored_or_sent(setup):
    server, mock, client, channels = setup
    channel = channels.create()
    before = [p["publishId"] for p in client.recent(20)]
    for body, fragment in hostile_publishes(channel):
        assert_beams_error(channels.publish(body), 422, fragment)
    assert_beams_error(channels.call("POST", data="{", base=f"{BASE}/publishes/channels"), 400, "JSON object")
    assert_beams_error(channels.call("POST", data="[1]", base=f"{BASE}/publishes/channels"), 400, "JSON object")
    huge = json.dumps({"channels": [channel], "apns": UPDATE, "pad": "x" * 70_000})
    assert_beams_error(channels.call("POST", data=huge, base=f"{BASE}/publishes/channels"), 400, "too large")
    time.sleep(0.3)  # a wrongly stored publish would be claimed and sent by now
    assert [p["publishId"] for p in client.recent(20)] == before
    assert broadcasts(mock) == []


def test_wrong_or_missing_secret_on_every_route(setup):
    server, mock, client, channels = setup
    channel = channels.create()
    routes = [("POST", "", {}), ("GET", "", None), ("GET", channels.path(channel), None),
              ("DELETE", channels.path(channel), None)]
    for method, path, body in routes:
        assert_beams_error(channels.call(method, path, body=body, secret="wrong-secret"), 401, "Incorrect Secret Key")
    assert_beams_error(channels.publish.__func__(Channels(client, secret="wrong-secret"),
                                                 {"channels": [channel], "apns": UPDATE}), 401)
    r = client.session.get(server.url(f"{BASE}/channels"), timeout=10)
    assert_beams_error(r, 400, "Authorization")
    assert_beams_error(Channels(client, instance_id="00000000-0000-4000-8000-000000000000").call("GET"), 404)
    assert channels.call("GET").json()["channels"] == [channel]  # nothing deleted
    assert broadcasts(mock) == []
