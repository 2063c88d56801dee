"""The console's test push to every platform (docs/CONSOLE.md "Test push", docs/API.md "Console test push"), end to
end against the strict stand-ins: the real binary sends one notification to a registered Android (FCM v1
stand-in), browser and UnifiedPush phone (the push-service stand-in, which DECRYPTS every message with the
subscription's private key) and Huawei device (the HMS stand-in, which checks its OAuth token and field rules), and
answers with what the provider said. A provider's "gone" answer removes the device exactly as a publish does: the
device card, the invalidation feed and the signed invalidation webhook. A platform the instance has no credentials
for, an unknown device and fields of the other platform kind are Beams-style errors, and nothing is sent."""
import base64
import concurrent.futures
import json
import signal
import uuid

import pytest
import requests

from beams import random_token, wait_for
from harness import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET
from receiver import Receiver
from test_hms import build_hms_platforms, hms_token
from test_publish_platforms import fcm_token

TEST_PUSH = "/admin_api/v1/instances/{instance}/console/test-push"
FEED = f"/customer_api/v1/instances/{INSTANCE_ID}/devices/invalidations"
WEBHOOK_SECRET = "whsec_" + base64.b64encode(b"console-test-push-key-0123456789").decode()


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    """All five platforms on the first instance (console on), the credential-less instance beside it, and a
    webhook receiver for `device.invalidated`."""
    hook = Receiver()
    env = build_hms_platforms(
        tmp_path_factory.mktemp("e2e-console-platforms"),
        overrides={"console": {"enabled": True, "testPushesPerSecond": 1000}},
        instance_overrides={"webhook": {"url": hook.url("/publishes"), "secret": WEBHOOK_SECRET,
                                        "invalidationsUrl": hook.url("/invalidations")}},
        refused_instance=False)
    env.hook = hook
    yield env
    env.close()
    env.hook.close()


def test_push(platforms, body, instance=INSTANCE_ID, secret=None):
    return requests.post(platforms.server.url(TEST_PUSH.format(instance=instance)), json=body,
                         verify=platforms.server.cert, timeout=60,
                         headers={"Authorization": f"Bearer {secret or platforms.client.secret}"})


test_push.__test__ = False  # a helper, not a test


def sent_once(platforms, body):
    r = test_push(platforms, body)
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "no-store"
    return r.json()


def browser(platforms, **options):
    """A browser subscription registered as the Web SDK does; returns it, its device id and its Web SDK token."""
    subscription = platforms.push.subscribe(application_server_key=platforms.vapid_public_key, **options)
    push_subscription = {"endpoint": subscription["endpoint"], "expirationTime": None,
                         "keys": {"p256dh": subscription["p256dh"], "auth": subscription["auth"]}}
    token = base64.b64encode(json.dumps(push_subscription).encode()).decode()
    return subscription, platforms.register("web", token, []), token


def test_an_fcm_test_push_arrives_at_the_fcm_stand_in_with_its_text_and_data_and_shows_fcms_answer(platforms):
    token = fcm_token()
    device_id = platforms.register("fcm", token, [])
    body = sent_once(platforms, {"deviceId": device_id, "title": "Hello", "body": "From the console",
                                 "data": {"order": "42"}})
    assert (body["platform"], body["deviceId"], body["deviceToken"]) == ("fcm", device_id, token), body
    answer = body["answer"]
    assert (answer["status"], answer["reason"], answer["attempts"], answer["failure"]) == (200, None, 1, None), body
    assert answer["messageId"].startswith("projects/"), answer
    assert body["deviceRemoved"] is False and body["device"]["id"] == device_id
    [sent] = [r for r in platforms.fcm.requests(token) if r["status"] == 200]
    assert sent["message"]["notification"] == {"title": "Hello", "body": "From the console"}, sent
    assert sent["message"]["data"]["order"] == "42", sent
    # By token, as the device look-up takes it, with FCM's own section given verbatim.
    body = sent_once(platforms, {"platform": "fcm", "deviceToken": token,
                                 "payload": {"data": {"silent": "yes"}, "priority": "high"}})
    assert body["answer"]["status"] == 200, body
    assert [r["message"]["data"].get("silent") for r in platforms.fcm.requests(token) if r["status"] == 200] == [None, "yes"]


def test_a_test_push_keeps_its_sender_through_a_reload_that_retires_it_and_shows_fcms_answer(platforms):
    """A reload (SIGHUP) rebuilds every instance's senders and retires the old ones. A test push under way holds
    its sender as a publish run does, so FCM's answer, 7 s late, still comes back; unheld, the retired sender
    closed at once with a 5 s grace period and the push lost its answer."""
    token = fcm_token()
    device_id = platforms.register("fcm", token, [])
    platforms.fcm.configure(send_latency_ms=7000)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(test_push, platforms, {"deviceId": device_id, "title": "Slow", "body": "FCM"})
            wait_for(lambda: platforms.fcm.requests(token), timeout=20, message="the test push never reached FCM")
            reloads = platforms.server.log_path.read_text().count("Config reloaded")
            platforms.server.proc.send_signal(signal.SIGHUP)
            platforms.server.wait_logged(lambda log: log.count("Config reloaded") > reloads)
            r = pending.result(timeout=60)
    finally:
        platforms.fcm.configure(send_latency_ms=0)
    assert r.status_code == 200, r.text
    answer = r.json()["answer"]
    assert (answer["status"], answer["failure"]) == (200, None), r.json()
    assert len(platforms.fcm.requests(token)) == 1, "sent once, not again on a new sender"


def test_a_web_test_push_arrives_decrypted_at_the_browsers_push_service(platforms):
    subscription, device_id, token = browser(platforms)
    body = sent_once(platforms, {"platform": "web", "deviceToken": token, "title": "Hi", "body": "Browser"})
    assert (body["platform"], body["deviceId"], body["endpoint"]) == ("web", device_id, subscription["endpoint"]), body
    assert body["deviceToken"] is None, "a subscription's keys are not echoed"
    assert (body["answer"]["status"], body["answer"]["attempts"], body["deviceRemoved"]) == (201, 1, False), body
    [message] = platforms.push.messages(subscription["id"])
    clear = json.loads(message["plaintext"])
    assert clear["notification"] == {"title": "Hi", "body": "Browser"}, clear
    assert clear["data"]["pusher"]["instanceId"] == INSTANCE_ID
    assert message["vapid"]["k"] == platforms.vapid_public_key


@pytest.mark.parametrize("flavour", ["ntfy", "nextpush", "autopush"])
def test_a_unifiedpush_test_push_arrives_decrypted_at_the_phones_push_server(platforms, flavour):
    phone, device_id = platforms.phone([], flavour)
    # Looked up by the subscription the app registered (endpoint and keys), as the console's device look-up does.
    subscription = {"endpoint": phone["endpoint"], "keys": {"p256dh": phone["p256dh"], "auth": phone["auth"]}}
    body = sent_once(platforms, {"platform": "unifiedpush", "deviceToken": json.dumps(subscription),
                                 "payload": {"notification": {"title": "Goal"}, "data": {"match": 42},
                                             "urgency": "high", "time_to_live": 60}})
    assert (body["platform"], body["deviceId"], body["endpoint"]) == ("unifiedpush", device_id, phone["endpoint"]), body
    assert body["answer"]["status"] in (200, 201) and body["deviceRemoved"] is False, body
    [message] = platforms.push.messages(phone["id"])
    assert json.loads(message["plaintext"])["data"]["match"] == 42
    assert (message["urgency"], message["ttl"]) == ("high", 60), message


def test_an_hms_test_push_reaches_the_huawei_stand_in_with_its_oauth_token(platforms):
    token = hms_token()
    device_id = platforms.register_hms(token)
    before = platforms.hms.stats()["sends"]
    body = sent_once(platforms, {"deviceId": device_id, "title": "Huawei", "body": "Push Kit"})
    assert (body["platform"], body["deviceToken"]) == ("hms", token), body
    assert (body["answer"]["status"], body["answer"]["reason"], body["answer"]["attempts"]) == (200, None, 1), body
    assert platforms.hms.delivered().get(token) == 1
    [sent] = platforms.hms.requests(since=before)
    assert sent["tokens"] == [token] and sent["code"] == "80000000", sent


def test_a_gone_answer_on_every_platform_removes_the_device_with_feed_entry_and_webhook(platforms):
    dead_fcm = fcm_token("unregistered-")
    fcm_id = platforms.register("fcm", dead_fcm, [])
    gone_web, web_id, _ = browser(platforms, marker="gone-410")
    gone_phone, phone_id = platforms.phone([], "autopush", marker="gone-404")
    illegal = hms_token("illegal-")
    hms_id = platforms.register_hms(illegal)
    expected = {fcm_id: ("fcm", "UNREGISTERED", 404), web_id: ("web", "SubscriptionGone", 410),
                phone_id: ("unifiedpush", "SubscriptionGone", 404), hms_id: ("hms", "80300007", 200)}
    for device_id, (platform, reason, status) in expected.items():
        body = sent_once(platforms, {"deviceId": device_id})
        assert (body["answer"]["reason"], body["answer"]["status"]) == (reason, status), body
        assert body["answer"]["meaning"], body
        assert body["deviceRemoved"] is True, body
        assert body["device"]["invalidatedAt"], body
        assert platforms.client.device(device_id)["invalidatedAt"], platform
        # Sent again: the device is already invalid, so this answer removes nothing more.
        again = sent_once(platforms, {"deviceId": device_id})
        assert again["deviceRemoved"] is False, again
    events = requests.get(platforms.server.url(FEED), params={"limit": 1000}, verify=platforms.server.cert, timeout=10,
                          headers={"Authorization": f"Bearer {platforms.client.secret}"}).json()["events"]
    by_device = {event["device_id"]: event for event in events}
    for device_id in expected:
        assert [e["device_id"] for e in events].count(device_id) == 1, "one invalidation per device, not per answer"
    for device_id, (platform, reason, status) in expected.items():
        event = by_device[device_id]
        assert (event["platform"], event["reason"], event["provider_status"]) == (platform, reason, status), event
    hooked = wait_for(lambda: (lambda got: got if got >= set(expected) else None)(
        {r["body"]["payload"]["device_id"] for r in platforms.hook.received if r["path"] == "/invalidations"}), timeout=15)
    assert hooked >= set(expected)


def test_a_platform_without_credentials_is_a_clear_error_and_nothing_is_sent(platforms):
    token = fcm_token()
    r = requests.post(platforms.server.url(f"/device_api/v1/instances/{NO_CREDENTIALS_INSTANCE_ID}/devices/fcm"),
                      json={"token": token, "metadata": {}}, verify=platforms.server.cert, timeout=10)
    assert r.status_code == 200, r.text
    device_id = r.json()["id"]
    r = test_push(platforms, {"deviceId": device_id, "title": "x"}, instance=NO_CREDENTIALS_INSTANCE_ID,
                  secret=NO_CREDENTIALS_SECRET)
    assert r.status_code == 422, r.text
    assert r.json() == {"error": "FCM not configured", "description": "This instance has no FCM service account "
                        "(instances[].fcm in the server config): nothing was sent"}
    assert platforms.fcm.requests(token) == []


@pytest.mark.parametrize("body, status, error, description", [
    ({"deviceId": "fcm-" + str(uuid.uuid4())}, 404, "Device not found",
     "No device with this id is registered on this instance"),
    ({"platform": "fcm", "deviceToken": fcm_token()}, 404, "Device not found", None),
    ({"platform": "hms", "deviceToken": hms_token()}, 404, "Device not found", None),
    ({"platform": "web", "deviceToken": "not a subscription"}, 422, "Unprocessable Entity", "`deviceToken`: "),
    ({"platform": "pager", "deviceToken": "x"}, 422, "Unprocessable Entity",
     "`platform`: must be one of apns, fcm, web, unifiedpush, hms"),
    ({"deviceToken": "ab" * 32, "deviceId": "x"}, 422, "Unprocessable Entity",
     "`deviceId`: give deviceToken or deviceId, not both"),
])
def test_unknown_devices_and_bad_names_are_beams_errors(platforms, body, status, error, description):
    r = test_push(platforms, body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == error and set(r.json()) == {"error", "description"}, r.text
    if description:
        assert r.json()["description"].startswith(description), r.text
        assert description.endswith(": ") or r.json()["description"] == description, r.text


def test_fields_of_the_other_kind_a_wrong_platform_and_an_oversized_message_are_refused_unsent(platforms):
    token = fcm_token()
    fcm_id = platforms.register("fcm", token, [])
    subscription, web_id, _ = browser(platforms)
    cases = [
        ({"deviceId": fcm_id, "environment": "sandbox"},
         "`environment`: applies to APNs only; a fcm test push takes title, body and data, or payload"),
        ({"deviceId": fcm_id, "platform": "web"}, "`platform`: the device is a fcm device, not web"),
        ({"deviceId": fcm_id, "payload": "[1]"}, "`payload`: must be a JSON object (the fcm section of a publish)"),
        ({"deviceId": fcm_id, "payload": {"bogus": 1}}, None),
        ({"deviceId": web_id, "body": "x" * 5000}, None),
        ({"deviceId": web_id, "title": "t", "payload": {"notification": {}}},
         "`payload`: give title/body/data or payload (the platform's publish section), not both"),
    ]
    for body, description in cases:
        r = test_push(platforms, body)
        assert r.status_code == 422, (body, r.text)
        assert set(r.json()) == {"error", "description"}
        if description:
            assert r.json()["description"] == description, r.text
    assert platforms.fcm.requests(token) == []
    assert platforms.push.messages(subscription["id"]) == []


def test_the_apns_test_push_by_device_id_uses_the_devices_token(platforms):
    token = random_token()
    device_id = platforms.register("apns", token, [])
    body = sent_once(platforms, {"deviceId": device_id, "alert": "by id"})
    assert (body["platform"], body["deviceToken"], body["answer"]["status"]) == ("apns", token, 200), body
    assert len(platforms.apns.requests_for(token)) == 1
