"""Per-publish `webhookUrl`: STARTED and FINISHED bodies, basic-auth credentials from the URL, and retries."""
import base64
import hashlib
import hmac
import time

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from harness import LOAD_TEST_LIMITS
from receiver import Receiver


@pytest.fixture
def receiver():
    receivers = []

    def make(fail_first=0):
        r = Receiver(fail_first)
        receivers.append(r)
        return r

    yield make
    for r in receivers:
        r.close()


@pytest.fixture(scope="module")
def beams(env):
    server, mock = env
    return Beams(server), mock


def test_started_and_finished_reach_the_webhook_url_with_counts(beams, receiver):
    client, mock = beams
    hook = receiver()
    interest = unique("hook")
    tokens = client.register_devices(3, [interest])
    mock.behave(tokens[2], status=400, reason="DeviceTokenNotForTopic")
    request_body = {"interests": [interest], "webhookUrl": hook.url(), "apns": alert("hooked")}
    publish_id = client.publish("interests", request_body)
    client.wait_finished(publish_id)
    got = wait_for(lambda: (lambda b: b if len(b) >= 2 else None)(hook.bodies(publish_id)), timeout=10)
    assert [r["body"]["status"] for r in got] == ["STARTED", "FINISHED"], got
    started, finished = got[0], got[1]
    assert started["path"] == "/hook"
    assert started["headers"]["Content-Type"] == "application/json"
    assert started["body"] == {"publishId": publish_id, "status": "STARTED", "requestBody": request_body}
    assert finished["body"]["requestBody"] == request_body
    assert finished["body"]["results"] == {
        "apns": {"numSuccessfulPublishes": 2, "numFailedPublishes": 1}, "failed": False}


def test_webhook_url_credentials_are_sent_as_basic_auth(beams, receiver):
    client, _ = beams
    hook = receiver()
    publish_id = client.publish("interests", {"interests": [unique("auth")], "apns": alert(),
                                              "webhookUrl": hook.url(credentials="hookuser:s3cret@")})
    got = wait_for(lambda: (lambda b: b if len(b) >= 2 else None)(hook.bodies(publish_id)), timeout=10)
    expected = "Basic " + base64.b64encode(b"hookuser:s3cret").decode()
    assert all(r["headers"].get("Authorization") == expected for r in got), [r["headers"] for r in got]


def test_failing_receiver_gets_a_retry_after_ten_seconds(beams, receiver):
    client, _ = beams
    hook = receiver(fail_first=1)
    publish_id = client.publish("interests", {"interests": [unique("retry")], "apns": alert(),
                                              "webhookUrl": hook.url()})
    # Beams' schedule: the first retry comes 10 s after the failure (docs/BEAMS-PROTOCOL.md §10).
    got = wait_for(lambda: (lambda b: b if len(b) >= 3 else None)(hook.bodies(publish_id)), timeout=25)
    statuses = [r["body"]["status"] for r in got]
    assert statuses.count("STARTED") == 2 and statuses.count("FINISHED") == 1, statuses
    first, retried = [r for r in got if r["body"]["status"] == "STARTED"]
    assert first["body"] == retried["body"]
    assert 9.0 <= retried["at"] - first["at"] <= 20.0, retried["at"] - first["at"]


def test_users_publish_sends_a_signed_publish_to_users_attempt(environment, receiver):
    hook = receiver()
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"webhook": {"url": hook.url("/instance"),
                                                                      "secret": "whsec-123"}}, name="hooked")
    client = Beams(server)
    delivered, failed, nobody = unique("ok"), unique("bad"), unique("none")
    good, gone, bad = random_token(), random_token(), random_token()
    client.register(good, user=delivered)
    client.register(gone, user=delivered)
    client.register(bad, user=failed, environment="sandbox")
    mock.behave(gone, status=410, reason="Unregistered")
    mock.behave(bad, status=400, reason="BadDeviceToken")
    publish_id = client.publish("users", {"users": [delivered, failed, nobody], "apns": alert()})
    client.wait_finished(publish_id)
    events = wait_for(lambda: [r for r in hook.received if r["path"] == "/instance"], timeout=10)
    assert len(events) == 1, events
    event = events[0]
    assert event["headers"]["Webhook-Event-Type"] == "v1.PublishToUsersAttempt"
    assert event["headers"]["User-Agent"] == "pusher-webhooks"
    expected = hmac.new(b"whsec-123", event["raw"], hashlib.sha1).hexdigest()
    assert event["headers"]["Webhook-Signature"] == expected
    assert event["body"]["metadata"]["event_type"] == "v1.PublishToUsersAttempt"
    assert event["body"]["payload"] == {
        "instance_id": client.instance_id, "publish_id": publish_id,
        "users_delivered_to_gateway": [delivered], "users_no_devices": [nobody], "users_gateway_failed": [failed],
    }, event["body"]


def test_publish_to_users_attempt_after_a_crash_counts_users_delivered_before_it(environment, receiver):
    """kill -9 in the middle of a users publish: the restarted run sees only the devices after the checkpoint, yet
    the webhook must still report the users delivered before the crash as delivered (not as having no devices)."""
    hook = receiver()
    mock = environment.mock()
    server = environment.server(mock, {"engine": {"leaseSeconds": 5},
                                       "apns": {"connectionsPerPool": 2, "streamsPerConnection": 50},
                                       "limits": LOAD_TEST_LIMITS},
                                instance_overrides={"webhook": {"url": hook.url("/instance"), "secret": "s"}},
                                name="users-crash")
    client = Beams(server)
    users = [unique("u") for _ in range(1000)]
    register_devices(server, client.instance_id, [random_token() for _ in users], users=users, secret=client.secret)
    mock.configure(delay_ms=100, record=False)
    nobody = unique("nobody")
    publish_id = client.publish("users", {"users": users[:999] + [nobody], "apns": alert()})
    wait_for(lambda: mock.stats()["requests"] >= 400, timeout=20, interval=0.01)
    server.kill9()
    server.start()
    status = client.wait_finished(publish_id)
    assert status["attempts"] == 2 and status["apns"]["accepted"] == 999, status
    events = wait_for(lambda: [r for r in hook.received if r["path"] == "/instance"], timeout=10)
    payload = events[0]["body"]["payload"]
    assert payload["users_no_devices"] == [nobody]
    assert payload["users_gateway_failed"] == []
    assert sorted(payload["users_delivered_to_gateway"]) == sorted(users[:999])


def test_delivery_and_open_reports_send_signed_user_notification_webhooks(environment, receiver):
    """The reporting API drives v1.UserNotificationAcknowledgement and v1.UserNotificationOpen for known users."""
    hook = receiver()
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"webhook": {"url": hook.url("/instance"),
                                                                      "secret": "whsec-456"}}, name="reports")
    client = Beams(server)
    user = unique("reader")
    device_id = client.register(random_token(), user=user)
    publish_id = client.publish("users", {"users": [user], "apns": alert()})
    client.wait_finished(publish_id)
    wait_for(lambda: [r for r in hook.received if r["headers"].get("Webhook-Event-Type") == "v1.PublishToUsersAttempt"])
    for event in ["Delivery", "Open", "Open"]:  # the repeated open counts once
        r = requests.post(server.url(f"/reporting_api/v2/instances/{client.instance_id}/events"),
                          json={"event": event, "instanceId": client.instance_id, "publishId": publish_id,
                                "deviceId": device_id, "userId": user, "timestampSecs": int(time.time())},
                          verify=server.cert, timeout=5)
        assert r.status_code == 200, r.text
    kinds = ["v1.UserNotificationAcknowledgement", "v1.UserNotificationOpen"]
    events = wait_for(lambda: (lambda e: e if len(e) >= 2 else None)(
        [r for r in hook.received if r["headers"].get("Webhook-Event-Type") in kinds]), timeout=10)
    time.sleep(0.5)
    events = [r for r in hook.received if r["headers"].get("Webhook-Event-Type") in kinds]
    assert sorted(r["headers"]["Webhook-Event-Type"] for r in events) == kinds
    for event in events:
        assert event["headers"]["Webhook-Signature"] == hmac.new(b"whsec-456", event["raw"], hashlib.sha1).hexdigest()
        assert event["body"]["payload"] == {"instance_id": client.instance_id, "publish_id": publish_id, "user_id": user}
        assert event["body"]["metadata"]["product"] == "beams"
