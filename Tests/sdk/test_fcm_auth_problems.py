"""FCM (and Web Push VAPID) credential problems end to end: the real binary against the strict FCM stand-in (real TLS, HTTP/2), with
the stand-in scripted to refuse the service account's assertion (`token_refusal`), to answer 403
PERMISSION_DENIED (`denied`) or SENDER_ID_MISMATCH. Each must show in `/ready` for the instance (`fcmCredentials:
"refused"` and the problem), in `/metrics`, and in the publish status as a per-delivery reason; no device is
invalidated and no delivery goes unaccounted for (accepted + failed = targets). Also: `fcm.projectId` is the
project in the send path, and a platform without credentials is only reported when the publish had its devices.
"""
import base64
import json

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from beams import Beams, random_token, unique
from harness import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET
from platform_mocks import FCM_PROJECT
from test_publish_platforms import Platforms, fcm_token, publish_body

def instance_ready(server, instance_id=INSTANCE_ID):
    """The instance's entry in the detailed `/ready` (the tests connect from loopback, which sees details)."""
    r = requests.get(server.url("/ready"), timeout=5)
    assert r.status_code == 200, r.text  # a credential problem never fails readiness
    return next(i for i in r.json()["checks"]["instances"] if i["id"] == instance_id)


def metric(server, series):
    for line in requests.get(server.url("/metrics"), timeout=5).text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def accounted(status, platform):
    counts = status[platform]
    return counts["accepted"] + counts["failed"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    environment = Platforms(tmp_path_factory.mktemp("e2e-fcm-auth"))
    yield environment
    environment.close()


# The tests below share one server and run in file order: the first needs a sender that FCM never accepted a
# message from, the last leaves the token endpoint refusing.


def test_sender_id_mismatch_before_any_accepted_message_keeps_devices_and_shows_in_ready(env):
    interest = unique("mismatch")
    android = [fcm_token("mismatch-") for _ in range(2)]
    ids = [env.register("fcm", token, [interest]) for token in android]
    env.register("apns", random_token(), [interest])

    status = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))

    assert status["fcm"]["failedByReason"] == {"SENDER_ID_MISMATCH": 2}, status
    assert status["fcm"]["devicesRemoved"] == 0 and status["devicesRemoved"] == 0, status
    assert status["apns"]["accepted"] == 1, status
    for device_id in ids:
        assert env.client.device(device_id)["invalidatedAt"] is None, "a wrong project must not wipe the devices"
    ready = instance_ready(env.server)
    assert ready["apnsCredentials"] == "loaded" and ready["webCredentials"] == "loaded", ready
    assert ready["fcmCredentials"] == "refused", ready
    problem = ready["fcm"]["problem"]
    assert problem["kind"] == "senderIDMismatch" and problem["count"] == 2, problem
    assert "SENDER_ID_MISMATCH" in problem["detail"] and problem["since"], problem
    assert ready["fcm"]["projectId"] == FCM_PROJECT
    assert metric(env.server, 'push_sender_credential_problems{platform="fcm"}') == 1
    assert metric(env.server, 'push_sender_credential_problems{platform="web"}') == 0
    text = requests.get(env.server.url("/metrics"), timeout=5).text
    in_flight = [line for line in text.splitlines() if line.startswith("push_sender_requests_in_flight{")]
    assert sorted(in_flight) == [f'push_sender_requests_in_flight{{platform="{p}"}} 0' for p in ("apns", "fcm", "web")]

    # One accepted message proves the project right: the problem is over.
    other = unique("accepted")
    env.register("fcm", fcm_token(), [other])
    accepted = env.client.wait_finished(env.client.publish("interests", publish_body(other)))
    assert accepted["fcm"]["accepted"] == 1, accepted
    ready = instance_ready(env.server)
    assert ready["fcmCredentials"] == "loaded" and ready["fcm"]["problem"] is None, ready
    assert metric(env.server, 'push_sender_credential_problems{platform="fcm"}') == 0
    expires = metric(env.server, f'push_fcm_access_token_expires_in_seconds{{instance="{INSTANCE_ID}"}}')
    assert expires is not None and 3000 < expires <= 3599, expires


def test_permission_denied_is_a_reason_per_delivery_and_a_ready_problem_and_devices_stay(env):
    interest = unique("denied")
    android = [fcm_token() for _ in range(3)]
    ids = [env.register("fcm", token, [interest]) for token in android]
    env.fcm.behave("*", "denied")
    try:
        status = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))
    finally:
        env.fcm.clear_behaviours()

    assert status["fcm"]["failedByReason"] == {"PERMISSION_DENIED": 3}, status
    assert accounted(status, "fcm") == 3 and status["fcm"]["devicesRemoved"] == 0, status
    for token in android:
        assert [r["status"] for r in env.fcm.requests(token)] == [403], "sent once, not retried"
    for device_id in ids:
        device = env.client.device(device_id)
        assert device["invalidatedAt"] is None, device
        assert device["lastDelivery"]["reason"] == "PERMISSION_DENIED", device
    ready = instance_ready(env.server)
    assert ready["fcmCredentials"] == "refused", ready
    assert ready["fcm"]["problem"]["kind"] == "permissionDenied" and ready["fcm"]["problem"]["count"] == 3, ready
    metrics = requests.get(env.server.url("/metrics"), timeout=5).text
    assert 'push_notifications_total{platform="fcm",status="403",reason="PERMISSION_DENIED"}' in metrics

    # The operator grants the role: the same devices get the next publish, and /ready is clean again.
    again = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))
    assert again["fcm"]["accepted"] == 3 and again["fcm"]["failedByReason"] == {}, again
    assert instance_ready(env.server)["fcmCredentials"] == "loaded"


def test_push_service_refusing_vapid_is_a_reason_per_delivery_and_a_ready_problem_and_the_browser_stays(env):
    # A browser that subscribed with another key (the instance's VAPID key was replaced): the push service
    # answers 403 to every message for it, as Chrome's and Apple's do.
    other_key = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    subscription = env.push.subscribe(application_server_key=base64.urlsafe_b64encode(other_key).rstrip(b"=").decode())
    token = base64.b64encode(json.dumps({"endpoint": subscription["endpoint"], "expirationTime": None, "keys": {
        "p256dh": subscription["p256dh"], "auth": subscription["auth"]}}).encode()).decode()
    interest = unique("vapid")
    device_id = env.register("web", token, [interest])

    status = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))

    assert status["web"]["failedByReason"] == {"VAPIDRejected": 1}, status
    assert status["web"]["devicesRemoved"] == 0 and env.client.device(device_id)["invalidatedAt"] is None
    assert env.push.messages(subscription["id"]) == [], "the push service delivered nothing"
    ready = instance_ready(env.server)
    assert ready["webCredentials"] == "refused", ready
    problem = ready["web"]["problems"][0]
    assert (problem["host"], problem["status"], problem["count"]) == ("127.0.0.1", 403, 1), problem
    assert "applicationServerKey" in problem["detail"], problem
    assert metric(env.server, 'push_sender_credential_problems{platform="web"}') == 1

    # A browser subscribed with the instance's key: that push service accepts again, the problem is over.
    fixed = unique("vapid-ok")
    good, _ = env.browser([fixed])
    accepted = env.client.wait_finished(env.client.publish("interests", publish_body(fixed)))
    assert accepted["web"]["accepted"] == 1 and len(env.push.messages(good["id"])) == 1, accepted
    assert instance_ready(env.server)["webCredentials"] == "loaded"


def test_token_endpoint_refusal_fails_each_delivery_with_a_clear_reason_and_shows_in_ready(env):
    interest = unique("refused")
    android = [fcm_token() for _ in range(3)]
    ids = [env.register("fcm", token, [interest]) for token in android]
    browser, _ = env.browser([interest])
    # The key was deleted in the Google Cloud console: the cached token dies (401) and no new one is issued.
    env.fcm.configure(token_refusal="invalid_grant")
    env.fcm.expire_tokens()

    status = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))

    assert status["fcm"]["failedByReason"] == {"AccessTokenRefused": 3}, status
    assert accounted(status, "fcm") == 3 and status["fcm"]["devicesRemoved"] == 0, status
    assert status["web"]["accepted"] == 1, "the other platforms are not held up"
    assert len(env.push.messages(browser["id"])) == 1
    for device_id in ids:
        assert env.client.device(device_id)["invalidatedAt"] is None
    ready = instance_ready(env.server)
    assert ready["fcmCredentials"] == "refused", ready
    problem = ready["fcm"]["problem"]
    assert problem["kind"] == "accessTokenRefused", problem
    assert "invalid_grant" in problem["detail"] and "Invalid JWT Signature." in problem["detail"], problem
    sent_before = len(env.fcm.requests())

    # While the refusal lasts, a publish fails at once without hammering Google (the token fetch backs off).
    second = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))
    assert second["fcm"]["failedByReason"] == {"AccessTokenRefused": 3}, second
    assert len(env.fcm.requests()) == sent_before, "nothing is sent without an access token"
    log = env.server.wait_logged("FCM access token refused")
    assert "BEGIN PRIVATE KEY" not in log


def test_project_id_override_is_the_project_in_the_send_path(tmp_path_factory):
    override = "other-project-7"
    env = Platforms(tmp_path_factory.mktemp("e2e-fcm-project"), fcm_project=override,
                    fcm_overrides={"projectId": override})
    try:
        interest = unique("project")
        token = fcm_token()
        env.register("fcm", token, [interest])
        status = env.client.wait_finished(env.client.publish("interests", publish_body(interest)))
        assert status["fcm"]["accepted"] == 1, status
        # The stand-in accepts only `override` in the path (404 NOT_FOUND for the file's own project_id).
        assert [(r["project"], r["status"]) for r in env.fcm.requests(token)] == [(override, 200)]
        assert instance_ready(env.server)["fcm"]["projectId"] == override
    finally:
        env.close()


def test_platform_without_credentials_is_reported_only_for_publishes_with_its_devices(env):
    client = Beams(env.server, instance_id=NO_CREDENTIALS_INSTANCE_ID, secret=NO_CREDENTIALS_SECRET)
    interest = unique("unconfigured")
    env.register("apns", random_token(), [interest], client=client)

    ios_only = client.wait_finished(client.publish("interests", publish_body(interest)))
    assert ios_only["apns"]["failedByReason"] == {"NoAPNsCredentials": 1}, ios_only
    for platform in ("fcm", "web"):
        assert ios_only[platform] == {"accepted": 0, "failed": 0, "failedByReason": {}, "devicesRemoved": 0}, ios_only

    env.register("fcm", fcm_token(), [interest], client=client)
    mixed = client.wait_finished(client.publish("interests", publish_body(interest)))
    assert mixed["fcm"]["failedByReason"] == {"NoFCMCredentials": 1}, mixed
    assert mixed["web"]["failedByReason"] == {}, mixed
    ready = instance_ready(env.server, NO_CREDENTIALS_INSTANCE_ID)
    assert (ready["apnsCredentials"], ready["fcmCredentials"], ready["webCredentials"]) == (
        "not configured", "not configured", "not configured"), ready
