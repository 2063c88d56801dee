"""Telling the customer a token died (issue 28 item 6): after an APNs 410 (strict mock APNs), an FCM UNREGISTERED
(FCM v1 stand-in) and Web Push 404 and 410 (push-service stand-in), the pull feed
`GET /customer_api/v1/instances/{id}/devices/invalidations` lists each device once with its reason and a masked
token, and the instance's `webhook.invalidationsUrl` receives a `device.invalidated` event per device, signed with
Standard Webhooks' `webhook-signature` and with Beams' hex HMAC-SHA1 (in `Webhook-Signature-SHA1`), both verified
here.
"""
import base64
import hashlib
import hmac
import time

import pytest
import requests

from beams import random_token, unique, wait_for
from harness import INSTANCE_ID
from test_publish_platforms import Platforms, fcm_token, publish_body

SECRET = "whsec_" + base64.b64encode(b"invalidation-test-key-0123456789").decode()
FEED = f"/customer_api/v1/instances/{INSTANCE_ID}/devices/invalidations"


@pytest.fixture(scope="module")
def platforms(tmp_path_factory, hook):
    env = Platforms(tmp_path_factory.mktemp("e2e-invalidations"), instance_overrides={
        "webhook": {"url": hook.url("/publishes"), "secret": SECRET, "invalidationsUrl": hook.url("/invalidations")}})
    yield env
    env.close()


def feed(platforms, secret=None, **params):
    return requests.get(platforms.server.url(FEED), params=params, verify=platforms.server.cert, timeout=10,
                        headers={"Authorization": f"Bearer {secret or platforms.client.secret}"})


def verify_standard_webhook(event):
    """Standard Webhooks: `v1,` + base64 HMAC-SHA256 over `id.timestamp.body`, keyed with the decoded whsec_ secret."""
    headers = {name.lower(): value for name, value in event["headers"].items()}
    message_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    assert abs(time.time() - int(timestamp)) < 300, timestamp
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{message_id}.{timestamp}.".encode() + event["raw"],
                                         hashlib.sha256).digest()).decode()
    assert f"v1,{expected}" in headers["webhook-signature"].split(" "), headers
    # One field of that name (names are case-insensitive: Beams' `Webhook-Signature` would collide with it); the
    # Beams-style hex HMAC-SHA1 of the body has a field of its own.
    assert [name for name in event["headers"] if name.lower() == "webhook-signature"] == ["webhook-signature"]
    beams = hmac.new(SECRET.encode(), event["raw"], hashlib.sha1).hexdigest()
    assert headers["webhook-signature-sha1"] == beams, headers
    return message_id


def test_dead_tokens_on_every_platform_reach_the_feed_and_the_signed_webhook_masked(platforms, hook):
    interest = unique("dead")
    dead_ios, live_ios = random_token(), random_token()
    apns_time_ms = int(time.time() * 1000) + 60_000  # APNs says the token died after the registration
    platforms.apns.behave(dead_ios, status=410, reason="Unregistered", timestamp=apns_time_ms)
    ios_id = platforms.register("apns", dead_ios, [interest])
    platforms.register("apns", live_ios, [interest])
    dead_android = fcm_token("unregistered-")
    android_id = platforms.register("fcm", dead_android, [interest])
    gone_404, web_404_id = platforms.browser([interest], marker="gone-404")
    gone_410, web_410_id = platforms.browser([interest], marker="gone-410")
    platforms.browser([interest])

    status = platforms.client.wait_finished(platforms.client.publish("interests", publish_body(interest)))
    assert status["devicesRemoved"] == 4, status

    events = feed(platforms).json()["events"]
    by_device = {event["device_id"]: event for event in events}
    expected = {ios_id: ("apns", "Unregistered", 410, dead_ios), android_id: ("fcm", "UNREGISTERED", 404, dead_android),
                web_404_id: ("web", "SubscriptionGone", 404, gone_404["endpoint"]),
                web_410_id: ("web", "SubscriptionGone", 410, gone_410["endpoint"])}
    assert set(by_device) == set(expected), events
    for device_id, (platform, reason, provider_status, token) in expected.items():
        event = by_device[device_id]
        assert (event["platform"], event["reason"], event["provider_status"]) == (platform, reason, provider_status), event
        assert event["event_type"] == "device.invalidated" and event["instance_id"] == INSTANCE_ID
        # Masked: the token's last six characters only (a browser's endpoint host and tail), never the token.
        assert event["token_masked"].endswith("…" + token[-6:]), (event, token)
        assert token not in event["token_masked"] and len(event["token_masked"]) < 40, event
    assert by_device[ios_id]["provider_timestamp"].startswith(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(apns_time_ms / 1000))), by_device[ios_id]
    assert by_device[android_id]["provider_timestamp"] is None
    assert by_device[web_404_id]["token_masked"].startswith(gone_404["endpoint"].split("/")[2].split(":")[0] + "/")

    received = wait_for(lambda: (lambda got: got if len(got) >= 4 else None)(
        [r for r in hook.received if r["path"] == "/invalidations"]), timeout=15)
    ids = set()
    for event in received:
        ids.add(verify_standard_webhook(event))
        assert event["headers"]["Webhook-Event-Type"] == "device.invalidated"
        assert event["body"]["metadata"]["event_type"] == "device.invalidated"
        payload = event["body"]["payload"]
        assert payload == by_device[payload["device_id"]], payload
        assert event["headers"]["webhook-id"] == payload["event_id"]
    assert ids == {event["event_id"] for event in events}
    assert not any(r["path"] == "/publishes" and r["body"].get("metadata", {}).get("event_type") == "device.invalidated"
                   for r in hook.received)
    assert all(dead_ios not in r["raw"].decode() and dead_android not in r["raw"].decode() for r in received)


def test_feed_pages_with_the_next_cursor_and_refuses_a_bad_cursor_limit_or_secret(platforms):
    interest = unique("pages")
    for _ in range(3):
        platforms.register("fcm", fcm_token("unregistered-"), [interest])
    platforms.client.wait_finished(platforms.client.publish("interests", publish_body(interest)))
    everything = feed(platforms, limit=1000).json()
    assert len(everything["events"]) >= 3
    first = feed(platforms, limit=2).json()
    assert [e["event_id"] for e in first["events"]] == [e["event_id"] for e in everything["events"][:2]]
    rest = feed(platforms, since=first["next_cursor"], limit=1000).json()
    assert [e["event_id"] for e in first["events"] + rest["events"]] == [e["event_id"] for e in everything["events"]]
    assert feed(platforms, since=rest["next_cursor"]).json() == {"events": [], "next_cursor": rest["next_cursor"]}

    for params in ({"since": "abc"}, {"since": "-1"}, {"limit": "0"}, {"limit": "1001"}, {"limit": "x"}):
        r = feed(platforms, **params)
        assert r.status_code == 400, (params, r.text)
        assert r.json()["error"] == "Bad request" and r.json()["description"], r.text
    assert feed(platforms, secret="wrong").status_code == 401


def test_a_device_deleted_by_the_app_or_with_its_user_reaches_the_feed_and_webhook_as_removed(platforms, hook):
    cursor = feed(platforms).json()["next_cursor"]
    token, users_token = random_token(), random_token()
    device_id = platforms.register("apns", token, [unique("rm")])
    users_device_id = platforms.register("apns", users_token, [unique("rm")])
    user = unique("user")
    platforms.client.set_user(users_device_id, user)
    session, secret = platforms.client.session, platforms.client.secret
    r = session.delete(platforms.server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}"), timeout=10)
    assert r.status_code == 200, r.text
    r = session.delete(platforms.server.url(f"/customer_api/v1/instances/{INSTANCE_ID}/users/{user}"),
                       headers={"Authorization": f"Bearer {secret}"}, timeout=10)
    assert r.status_code == 200, r.text

    events = feed(platforms, since=cursor).json()["events"]
    assert [(e["device_id"], e["event_type"], e["reason"], e["provider_status"], e["user_id"]) for e in events] == [
        (device_id, "device.removed", "DeviceDeleted", 0, None),
        (users_device_id, "device.removed", "UserDeleted", 0, user)], events
    assert events[0]["token_masked"] == "…" + token[-6:] and events[0]["provider_timestamp"] is None
    ours = (device_id, users_device_id)
    received = wait_for(lambda: (lambda got: got if len(got) == 2 else None)(
        [r for r in hook.received if r["path"] == "/invalidations" and r["body"]["payload"]["device_id"] in ours]),
        timeout=15)
    for event in received:
        verify_standard_webhook(event)
        assert event["headers"]["Webhook-Event-Type"] == "device.removed"
        assert event["body"]["metadata"]["event_type"] == "device.removed"
        assert event["body"]["payload"] in events
