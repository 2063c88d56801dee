"""Huawei Push Kit end to end (docs/API.md "Huawei Push Kit"): the real binary registers HMS tokens the way an app
with HMS Core sends them, and delivers through the strict stand-in (Tests/Support/mock_hms.py), which issues OAuth
tokens only for the configured client ID and secret, checks the bearer token, the body limits and the field rules,
and answers every result code on demand.
"""
import json
import uuid

import pytest
import requests

from beams import Beams, random_token, unique, wait_for
from harness import Mock, Server, write_apns_key, write_vapid_key
from platform_mocks import HMS_APP_ID, MockFCM, MockHMS, MockPushService
from test_publish_platforms import fcm_token, publish_body
from test_unifiedpush import UnifiedPushPlatforms, unifiedpush_section

DEVICES = "/device_api/v1/instances/{instance}/devices"
# An instance whose hms secret Huawei (the stand-in) refuses.
REFUSED_INSTANCE_ID = "6e2b1a4c-9d3f-4e5a-8b7c-1d2e3f4a5b6c"
REFUSED_SECRET = "refused-hms-instance-secret-0123456789"


def hms_token(marker=""):
    """An HMS push token's shape (Huawei says not to rely on its length); `illegal-` makes the stand-in refuse it."""
    return f"{marker}IQAAAACy0{uuid.uuid4().hex}{uuid.uuid4().hex}AQ"


class HMSPlatforms(UnifiedPushPlatforms):
    def register_hms(self, token, interests=(), instance=None, secret=None):
        instance = instance or self.client.instance_id
        r = self.client.session.post(self.server.url(DEVICES.format(instance=instance) + "/hms"),
                                     json={"token": token, "metadata": {"sdkVersion": "hms-app 1.0"}}, timeout=10)
        assert r.status_code == 200, r.text
        device_id = r.json()["id"]
        if interests:
            r = self.client.session.put(self.server.url(f"{DEVICES.format(instance=instance)}/hms/{device_id}/interests"),
                                        json={"interests": list(interests)}, timeout=10)
            assert r.status_code == 200, r.text
        return device_id

    def ready_instance(self, instance_id):
        r = requests.get(self.server.url("/ready"), timeout=5)
        return next(i for i in r.json()["checks"]["instances"] if i["id"] == instance_id)

    def close(self):
        for process in (self.server, self.apns, self.fcm, self.push, self.hms):
            try:
                process.stop()
            except Exception:  # noqa: BLE001  (clean-up must reach every process)
                process.proc.kill()


def build_hms_platforms(directory, overrides=None, instance_overrides=None, refused_instance=True):
    """All five platforms on the first instance against the strict stand-ins (`instance_overrides` adds sections to
    it) and, with `refused_instance`, a second instance whose HMS client secret the Huawei stand-in refuses."""
    env = object.__new__(HMSPlatforms)
    p8, pub = write_apns_key(directory)
    vapid, env.vapid_public_key = write_vapid_key(directory)
    env.apns, env.fcm, env.push, env.hms = Mock(directory, pub), MockFCM(directory), MockPushService(directory), MockHMS(directory)
    refused = [{"id": REFUSED_INSTANCE_ID, "secretKey": REFUSED_SECRET, "hms": env.hms.config(secret="not-the-secret")}]
    env.server = Server(directory, env.apns, p8, overrides=overrides, instance_overrides={
        "fcm": env.fcm.config(), "web": env.push.config(vapid), "unifiedpush": unifiedpush_section(env.push),
        "hms": env.hms.config(), **(instance_overrides or {})},
        extra_instances=refused if refused_instance else ())
    env.client = Beams(env.server)
    return env


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    env = build_hms_platforms(tmp_path_factory.mktemp("e2e-hms"))
    yield env
    env.close()


def hms_body(interest, **section):
    return {"interests": [interest], "hms": {"notification": {"title": "Goal", "body": "1-0"},
                                             "data": {"match": 42}, **section}}


def test_registration_takes_any_printable_token_and_refuses_empty_long_or_spaced_ones(platforms):
    base = platforms.server.url(DEVICES.format(instance=platforms.client.instance_id) + "/hms")
    for token in ["short", hms_token(), "x" * 512]:
        r = requests.post(base, json={"token": token}, timeout=10)
        assert r.status_code == 200, (token, r.text)
        assert r.json()["id"]
    for token in ["", "x" * 513, "has space", "ünï"]:
        r = requests.post(base, json={"token": token}, timeout=10)
        assert r.status_code == 400, (token, r.text)
    # The same token registers the same device (upsert), as on every platform.
    token = hms_token()
    assert platforms.register_hms(token) == platforms.register_hms(token)


def test_one_publish_reaches_apns_fcm_web_unifiedpush_and_hms_devices_exactly_once(platforms):
    interest = unique("five")
    ios = [random_token() for _ in range(2)]
    android = [fcm_token() for _ in range(2)]
    huawei = [hms_token() for _ in range(3)]
    for token in ios:
        platforms.register("apns", token, [interest])
    for token in android:
        platforms.register("fcm", token, [interest])
    browsers = [platforms.browser([interest])[0] for _ in range(2)]
    phones = [platforms.phone([interest], flavour)[0] for flavour in ("ntfy", "autopush")]
    for token in huawei:
        platforms.register_hms(token, [interest])
    sends_before = platforms.hms.stats()["sends"]

    body = publish_body(interest)
    body["unifiedpush"] = {"notification": {"title": "Goal", "body": "1-0"}, "data": {"match": 42}}
    body["hms"] = {"notification": {"title": "Goal", "body": "1-0"}, "data": {"match": 42},
                   "android": {"urgency": "HIGH", "category": "IM"}}
    publish_id = platforms.client.publish("interests", body)
    status = platforms.client.wait_finished(publish_id)

    assert status["targets"] == 11, status
    assert (status["apns"]["accepted"], status["fcm"]["accepted"], status["web"]["accepted"],
            status["unifiedpush"]["accepted"], status["hms"]["accepted"]) == (2, 2, 2, 2, 3), status
    assert status["hms"]["failed"] == 0, status
    for token in ios:
        assert len(platforms.apns.requests_for(token)) == 1
    for token in android:
        assert len([r for r in platforms.fcm.requests(token) if r["status"] == 200]) == 1
    for subscription in browsers + phones:
        assert len(platforms.push.messages(subscription["id"])) == 1
    delivered = platforms.hms.delivered()
    assert all(delivered.get(token) == 1 for token in huawei), delivered
    # One request carried the three tokens, with the mapped message.
    sent = [r for r in platforms.hms.requests(since=sends_before) if set(r["tokens"]) & set(huawei)]
    assert len(sent) == 1 and sorted(sent[0]["tokens"]) == sorted(huawei), sent
    message = sent[0]["message"]
    assert message["notification"] == {"title": "Goal", "body": "1-0"}
    assert message["android"] == {"urgency": "HIGH", "category": "IM", "notification": {"click_action": {"type": 3}}}
    assert json.loads(message["data"]) == {"match": 42, "pusher": {"instanceId": platforms.client.instance_id,
                                                                   "publishId": publish_id}}
    assert sent[0]["app_id"] == HMS_APP_ID and sent[0]["code"] == "80000000"


def test_partial_success_removes_exactly_the_illegal_tokens_and_resends_nothing(platforms):
    interest = unique("partial")
    good = [hms_token() for _ in range(3)]
    bad = [hms_token("illegal-") for _ in range(2)]
    ids = {token: platforms.register_hms(token, [interest]) for token in good + bad}
    sends_before = platforms.hms.stats()["sends"]

    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))

    hms = status["hms"]
    assert hms["accepted"] == 3 and hms["failedByReason"] == {"80100000": 2}, status
    assert hms["devicesRemoved"] == 2, status
    for token in bad:
        assert platforms.client.device(ids[token])["invalidatedAt"], token
    for token in good:
        assert not platforms.client.device(ids[token]).get("invalidatedAt"), token
    delivered = platforms.hms.delivered()
    assert [delivered.get(token) for token in good] == [1, 1, 1], delivered
    sent = platforms.hms.requests(since=sends_before)
    assert len(sent) == 1 and sent[0]["code"] == "80100000", sent  # the accepted tokens were not sent again

    # The removed devices are not sent to again.
    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
    assert status["hms"]["accepted"] == 3 and status["hms"]["failed"] == 0, status
    assert [sorted(r["tokens"]) for r in platforms.hms.requests(since=sends_before + 1)] == [sorted(good)]


def test_all_tokens_illegal_removes_them(platforms):
    interest = unique("allbad")
    bad = [hms_token("illegal-") for _ in range(2)]
    ids = [platforms.register_hms(token, [interest]) for token in bad]
    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
    assert status["hms"]["failedByReason"] == {"80300007": 2} and status["hms"]["devicesRemoved"] == 2, status
    assert all(platforms.client.device(i)["invalidatedAt"] for i in ids)


def test_expired_access_token_is_refreshed_once_and_the_batch_resent(platforms):
    interest = unique("expired")
    tokens = [hms_token() for _ in range(2)]
    for token in tokens:
        platforms.register_hms(token, [interest])
    # Make sure a token is held, then let the stand-in expire it (the server still thinks it is good).
    platforms.client.wait_finished(platforms.client.publish("interests", hms_body(unique("warm"))))
    platforms.hms.expire_tokens()
    before = platforms.hms.stats()

    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))

    assert status["hms"]["accepted"] == 2 and status["hms"]["failed"] == 0, status
    after = platforms.hms.stats()
    assert after["tokens_issued"] - before["tokens_issued"] == 1
    sent = platforms.hms.requests(since=before["sends"])
    assert [(r["status"], r["code"]) for r in sent] == [(401, "80200003"), (200, "80000000")], sent
    assert all(platforms.hms.delivered()[token] == 1 for token in tokens)


def test_access_token_is_not_requested_per_send(platforms):
    interest = unique("reuse")
    platforms.register_hms(hms_token(), [interest])
    platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
    before = platforms.hms.stats()
    for _ in range(5):
        status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
        assert status["hms"]["accepted"] == 1, status
    after = platforms.hms.stats()
    assert after["sends"] - before["sends"] == 5
    assert after["token_requests"] == before["token_requests"], (before, after)


def test_throttled_503_is_retried_after_a_backoff_and_a_final_code_fails_with_its_reason(platforms):
    interest = unique("throttle")
    token = hms_token()
    device_id = platforms.register_hms(token, [interest])
    platforms.hms.script({"status": 503, "retry_after": 1})
    before = platforms.hms.stats()["sends"]
    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
    assert status["hms"]["accepted"] == 1, status
    assert [r["status"] for r in platforms.hms.requests(since=before)] == [503, 200]

    platforms.hms.script({"code": "80300002", "status": 403})
    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)))
    assert status["hms"]["failedByReason"] == {"80300002": 1} and status["hms"]["devicesRemoved"] == 0, status
    assert not platforms.client.device(device_id).get("invalidatedAt")


def test_publish_intake_refuses_a_bad_or_oversized_hms_section(platforms):
    for section, path in [({"data": 5}, "hms.data"), ({"data": "x" * 4100}, "hms"),
                          ({"android": {"notification": {"click_action": {"type": 2}}}},
                           "hms.android.notification.click_action")]:
        r = platforms.client.publish_raw("/interests", {"interests": ["a"], "hms": section})
        assert r.status_code == 422, r.text
        assert f"`{path}`" in r.json()["description"], r.text


def test_ready_shows_credentials_loaded_and_refused(platforms):
    assert platforms.ready_instance(platforms.client.instance_id)["hmsCredentials"] == "loaded"
    refused = Beams(platforms.server)
    refused.instance_id, refused.secret = REFUSED_INSTANCE_ID, REFUSED_SECRET
    r = requests.post(platforms.server.url(DEVICES.format(instance=REFUSED_INSTANCE_ID) + "/hms"),
                      json={"token": hms_token()}, timeout=10)
    assert r.status_code == 200, r.text
    device = r.json()["id"]
    r = requests.put(platforms.server.url(f"{DEVICES.format(instance=REFUSED_INSTANCE_ID)}/hms/{device}/interests"),
                     json={"interests": ["refused"]}, timeout=10)
    assert r.status_code == 200, r.text
    status = refused.wait_finished(refused.publish("interests", hms_body("refused")))
    assert status["hms"]["failedByReason"] == {"AccessTokenRefused": 1}, status
    entry = platforms.ready_instance(REFUSED_INSTANCE_ID)
    assert entry["hmsCredentials"] == "refused" and "invalid client_secret" in entry["hms"]["problem"], entry


def test_more_than_1000_devices_go_in_batches_of_at_most_1000_tokens_each_sent_once(platforms):
    from concurrent.futures import ThreadPoolExecutor

    interest = unique("batch")
    tokens = [hms_token() for _ in range(1203)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda token: platforms.register_hms(token, [interest]), tokens))
    before = platforms.hms.stats()

    status = platforms.client.wait_finished(platforms.client.publish("interests", hms_body(interest)), timeout=60)

    assert status["hms"]["accepted"] == 1203 and status["hms"]["failed"] == 0, status
    sent = platforms.hms.requests(since=before["sends"])
    assert all(len(r["tokens"]) <= 1000 for r in sent) and len(sent) >= 2, [len(r["tokens"]) for r in sent]
    assert sorted(t for r in sent for t in r["tokens"]) == sorted(tokens)
    delivered = platforms.hms.delivered()
    assert all(delivered[token] == 1 for token in tokens)
    # At most one token request for both batches (none when an earlier test left a live token).
    assert platforms.hms.stats()["token_requests"] - before["token_requests"] <= 1
