"""One publish, three platforms, end to end: the real binary delivers one interests publish to iOS devices through
the strict mock APNs, to Android devices through the strict FCM v1 stand-in (OAuth2 token it issued, message
schema) and to browsers through the strict push-service stand-in, which DECRYPTS every message with the
subscription's private key, so the assertions read what the browser's service worker would read.
"""
import base64
import json
import uuid

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, Mock, Server, write_apns_key, write_vapid_key
from platform_mocks import FCM_PROJECT, MockFCM, MockPushService


def fcm_token(marker=""):
    """A registration token's shape; the FCM stand-in answers per marker prefix (`unregistered-` → UNREGISTERED)."""
    return f"{marker}{uuid.uuid4().hex[:22]}:APA91b{uuid.uuid4().hex * 3}"


class Platforms:
    """The server with all three platforms configured, and the three stand-ins."""

    def __init__(self, directory, overrides=None, fcm_project=None, fcm_overrides=None, instance_overrides=None):
        p8, pub = write_apns_key(directory)
        vapid, self.vapid_public_key = write_vapid_key(directory)
        self.apns = Mock(directory, pub)
        self.fcm = MockFCM(directory, project=fcm_project)
        self.push = MockPushService(directory)
        self.server = Server(directory, self.apns, p8, overrides=overrides, instance_overrides={
            "fcm": {**self.fcm.config(), **(fcm_overrides or {})}, "web": self.push.config(vapid),
            **(instance_overrides or {})})
        self.client = Beams(self.server)

    def register(self, platform, token, interests, client=None):
        """Registers a device of `platform` subscribed to `interests` in the instance of `client` (a `Beams`; the
        default instance's when None), as its SDK does; returns its id."""
        client = client or self.client
        devices = f"/device_api/v1/instances/{client.instance_id}/devices"
        body = {"token": token, "metadata": {}}
        if platform == "apns":
            body["bundleIdentifier"] = "com.example.sdktest"
        r = client.session.post(self.server.url(f"{devices}/{platform}"), json=body, timeout=10)
        assert r.status_code == 200, r.text
        device_id = r.json()["id"]
        r = client.session.put(self.server.url(f"{devices}/{platform}/{device_id}/interests"),
                               json={"interests": list(interests)}, timeout=10)
        assert r.status_code == 200, r.text
        return device_id

    def browser(self, interests, **options):
        """A browser subscribed with the instance's VAPID key, registered as the Web SDK does."""
        subscription = self.push.subscribe(application_server_key=self.vapid_public_key, **options)
        push_subscription = {"endpoint": subscription["endpoint"], "expirationTime": None,
                             "keys": {"p256dh": subscription["p256dh"], "auth": subscription["auth"]}}
        token = base64.b64encode(json.dumps(push_subscription).encode()).decode()
        return subscription, self.register("web", token, interests)

    def close(self):
        for process in (self.server, self.apns, self.fcm, self.push):
            try:
                process.stop()
            except Exception:  # noqa: BLE001  (clean-up must reach every process)
                process.proc.kill()


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    env = Platforms(tmp_path_factory.mktemp("e2e-platforms"))
    yield env
    env.close()


def publish_body(interest):
    return {"interests": [interest], "apns": alert("Goal", "1-0"),
            "fcm": {"notification": {"title": "Goal", "body": "1-0"}, "data": {"match": 42}},
            "web": {"notification": {"title": "Goal", "body": "1-0", "deep_link": "https://example.com/m/42"},
                    "data": {"match": 42}, "time_to_live": 600}}


def test_one_publish_reaches_ios_android_and_web_devices_exactly_once(platforms):
    interest = unique("three")
    ios = [random_token() for _ in range(3)]
    android = [fcm_token() for _ in range(3)]
    for token in ios:
        platforms.register("apns", token, [interest])
    for token in android:
        platforms.register("fcm", token, [interest])
    browsers = [platforms.browser([interest])[0] for _ in range(3)]

    publish_id = platforms.client.publish("interests", publish_body(interest))
    status = platforms.client.wait_finished(publish_id)

    assert status["targets"] == 9, status
    assert status["apns"]["accepted"] == 3 and status["fcm"]["accepted"] == 3 and status["web"]["accepted"] == 3, status
    for token in ios:
        assert len(platforms.apns.requests_for(token)) == 1
    for token in android:
        sent = [r for r in platforms.fcm.requests(token) if r["status"] == 200]
        assert len(sent) == 1, sent
        message = sent[0]["message"]
        assert sent[0]["project"] == FCM_PROJECT
        assert message["notification"] == {"title": "Goal", "body": "1-0"}
        assert message["data"]["match"] == "42"
        assert json.loads(message["data"]["pusher"]) == {"instanceId": INSTANCE_ID, "publishId": publish_id,
                                                         "hasDisplayableContent": True, "hasData": True}
    for browser in browsers:
        messages = platforms.push.messages(browser["id"])
        assert len(messages) == 1, messages
        assert messages[0]["ttl"] == 600 and messages[0]["urgency"] is None
        # What the Beams service worker reads, decrypted by the stand-in with the browser's private key.
        assert json.loads(messages[0]["plaintext"]) == {
            "notification": {"title": "Goal", "body": "1-0", "deep_link": "https://example.com/m/42"},
            "data": {"match": 42, "pusher": {"instanceId": INSTANCE_ID, "publishId": publish_id,
                                             "hasDisplayableContent": True, "hasData": True}},
        }
    metrics = requests.get(platforms.server.url("/metrics"), verify=platforms.server.cert, timeout=5).text
    for platform, status_code in (("apns", "200"), ("fcm", "200"), ("web", "201")):
        assert f'platform="{platform}"' in metrics and status_code in metrics


def test_dead_tokens_are_pruned_per_platform_and_other_devices_still_delivered(platforms):
    interest = unique("prune")
    dead_ios, live_ios = random_token(), random_token()
    platforms.apns.behave(dead_ios, status=410, reason="Unregistered")
    dead_ios_id = platforms.register("apns", dead_ios, [interest])
    platforms.register("apns", live_ios, [interest])
    dead_android, live_android = fcm_token("unregistered-"), fcm_token()
    dead_android_id = platforms.register("fcm", dead_android, [interest])
    live_android_id = platforms.register("fcm", live_android, [interest])
    _, gone_browser_id = platforms.browser([interest], marker="gone-410")
    live_browser, live_browser_id = platforms.browser([interest])

    publish_id = platforms.client.publish("interests", publish_body(interest))
    status = platforms.client.wait_finished(publish_id)

    assert status["fcm"]["failedByReason"] == {"UNREGISTERED": 1}, status
    assert status["web"]["failedByReason"] == {"SubscriptionGone": 1}, status
    assert status["apns"]["failedByReason"] == {"Unregistered": 1}, status
    assert status["devicesRemoved"] == 3 and status["fcm"]["devicesRemoved"] == 1 and status["web"]["devicesRemoved"] == 1
    for device_id, platform in ((dead_ios_id, "apns"), (dead_android_id, "fcm"), (gone_browser_id, "web")):
        assert platforms.client.device(device_id)["invalidatedAt"], (platform, device_id)
    for device_id in (live_android_id, live_browser_id):
        assert platforms.client.device(device_id)["invalidatedAt"] is None
    assert len(platforms.push.messages(live_browser["id"])) == 1

    # The next publish is not sent to the pruned devices.
    second = platforms.client.wait_finished(platforms.client.publish("interests", publish_body(interest)))
    assert second["targets"] == 3, second
    assert len(platforms.fcm.requests(dead_android)) == 1, "a pruned Android device is not sent to again"


def test_invalid_fcm_and_web_sections_are_refused_at_publish_time_and_nothing_is_sent(platforms):
    interest = unique("bad")
    platforms.register("fcm", fcm_token(), [interest])
    for body, path in (({"fcm": {"notification": {"colour": "red"}}}, "fcm.notification.colour"),
                       ({"web": {"data": {"pusher": {}}}}, "web.data")):
        r = platforms.client.publish_raw("/interests", {"interests": [interest], **body})
        assert r.status_code == 422, r.text
        answer = r.json()
        assert answer["error"] == "Unprocessable Entity" and f"`{path}`" in answer["description"], answer


def answers_so_far(server):
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("push_notifications_total{"))


def test_kill_9_mid_mixed_fanout_then_restart_reaches_every_device_once_but_the_window(tmp_path_factory):
    # The engine resumes a dead node's publish once its lease expired: the shortest lease keeps the test short.
    env = Platforms(tmp_path_factory.mktemp("e2e-platforms-crash"),
                    overrides={"engine": {"leaseSeconds": 5}, "limits": LOAD_TEST_LIMITS})
    try:
        interest = unique("crash-mixed")
        ios = [random_token() for _ in range(400)]
        android = [fcm_token() for _ in range(400)]
        for token in ios:
            env.register("apns", token, [interest])
        for token in android:
            env.register("fcm", token, [interest])
        browsers = [env.browser([interest])[0] for _ in range(200)]
        total = len(ios) + len(android) + len(browsers)
        env.apns.configure(delay_ms=5)

        publish_id = env.client.publish("interests", publish_body(interest))
        at_kill = wait_for(lambda: (lambda n: n if n >= total // 4 else None)(answers_so_far(env.server)),
                           timeout=120, interval=0.005, message="the fan-out never reached a quarter")
        env.server.kill9()
        assert at_kill < total, "the publish ended before the kill: nothing was tested"
        env.server.start()
        status = env.client.wait_finished(publish_id, timeout=120)
        assert status["attempts"] >= 2, status

        apns_sent = env.apns.stats()["sent_per_token"]
        fcm_sent = {}
        for request in env.fcm.requests():
            if request["status"] == 200:
                fcm_sent[request["token"]] = fcm_sent.get(request["token"], 0) + 1
        web_sent = {}
        for message in env.push.messages():
            web_sent[message["subscription"]] = web_sent.get(message["subscription"], 0) + 1
        counts = ([sum(apns_sent.get(token, {}).values()) for token in ios]
                  + [fcm_sent.get(token, 0) for token in android]
                  + [web_sent.get(browser["id"], 0) for browser in browsers])
        missing = counts.count(0)
        duplicates = sum(count - 1 for count in counts if count > 1)
        assert missing == 0, f"{missing} devices got nothing"
        # What a crash may repeat: the requests in flight plus the answers not yet checkpointed, per sender window
        # (APNs 4 × 250, FCM 4 × 100, Web Push 512 by default), far above what 1,000 devices can have in flight.
        assert duplicates <= 1000 + 400 + 512, duplicates
        assert status["apns"]["accepted"] + status["fcm"]["accepted"] + status["web"]["accepted"] == total, status
    finally:
        env.close()
