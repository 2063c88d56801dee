"""UnifiedPush end to end (docs/API.md "UnifiedPush", docs/SECURITY.md "UnifiedPush endpoints"): the real binary
registers UnifiedPush subscriptions the way an Android app with the UnifiedPush connector sends them, and delivers
RFC 8291 Web Push with VAPID to the push server the user picked. The strict stand-in (Tests/Support/
mock_push_service.py) plays ntfy, NextPush and Mozilla autopush (Sunup) and the phones behind them: it DECRYPTS every
message with the subscription's private key, so an accepted message proves the app could read it.
"""
import json
import socket
import time
import uuid

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from beams import random_token, unique, wait_for
from beams_client import b64url, beams_claims, jwt_hs256
from test_publish_platforms import Platforms, fcm_token, publish_body

DEVICES = "/device_api/v1/instances/{instance}/devices"
# An instance with UnifiedPush and no address allowance: the SSRF refusals are judged on it.
STRICT_INSTANCE_ID = "3c5d7e9f-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
STRICT_SECRET = "strict-unifiedpush-instance-secret-0123"


def unifiedpush_section(push, ports=None, **extra):
    """The instance's `unifiedpush` section for the stand-in on 127.0.0.1: its port allowed, loopback allowed (the
    explicit test switch), its CA trusted."""
    port = int(push.origin.rsplit(":", 1)[1])
    return {"ports": ports or [port], "allowedDestinations": ["127.0.0.1"], "caFile": push.ca_file, **extra}


class UnifiedPushPlatforms(Platforms):
    """All four platforms configured on the first instance, and a strict UnifiedPush instance beside it (built by
    `_build`, which adds the `unifiedpush` section to what `Platforms` configures)."""

    def register_unifiedpush(self, subscription, interests=(), instance=None, metadata=None):
        """What the app posts after its distributor's onNewEndpoint (docs/CLIENTS.md)."""
        body = {"endpoint": subscription["endpoint"],
                "keys": {"p256dh": subscription["p256dh"], "auth": subscription["auth"]},
                "metadata": metadata or {"sdkVersion": "unifiedpush-connector 3.0.10", "distributor": "io.heckel.ntfy"}}
        r = self.client.session.post(self.server.url(DEVICES.format(instance=instance or self.instance_id())
                                                     + "/unifiedpush"), json=body, timeout=10)
        if instance is not None:
            return r
        assert r.status_code == 200, r.text
        device_id = r.json()["id"]
        if interests:
            r = self.client.session.put(self.server.url(f"{DEVICES.format(instance=self.instance_id())}/unifiedpush/"
                                                        f"{device_id}/interests"), json={"interests": list(interests)},
                                        timeout=10)
            assert r.status_code == 200, r.text
        return device_id

    def phone(self, interests, flavour, **options):
        subscription = self.push.subscribe(application_server_key=self.vapid_public_key, flavour=flavour, **options)
        return subscription, self.register_unifiedpush(subscription, interests)

    def instance_id(self):
        return self.client.instance_id


def _build(directory, overrides=None, unifiedpush=None):
    """Platforms with the `unifiedpush` section added to the first instance and a strict second instance."""
    from harness import Mock, Server, write_apns_key, write_vapid_key
    from platform_mocks import MockFCM, MockPushService

    env = object.__new__(UnifiedPushPlatforms)
    p8, pub = write_apns_key(directory)
    vapid, env.vapid_public_key = write_vapid_key(directory)
    env.apns, env.fcm, env.push = Mock(directory, pub), MockFCM(directory), MockPushService(directory)
    web = env.push.config(vapid)
    env.server = Server(directory, env.apns, p8, overrides=overrides, instance_overrides={
        "fcm": env.fcm.config(), "web": web, "unifiedpush": {**unifiedpush_section(env.push), **(unifiedpush or {})}},
        extra_instances=[{"id": STRICT_INSTANCE_ID, "secretKey": STRICT_SECRET,
                          "web": {"vapidKeyFile": str(vapid), "subject": "mailto:ops@example.com"},
                          "unifiedpush": {"ports": [443, int(env.push.origin.rsplit(":", 1)[1])]}}])
    from beams import Beams
    env.client = Beams(env.server)
    return env


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    env = _build(tmp_path_factory.mktemp("e2e-unifiedpush"))
    yield env
    env.close()


def up_body(interest, **section):
    return {"interests": [interest],
            "unifiedpush": {"notification": {"title": "Goal", "body": "1-0"}, "data": {"match": 42},
                            "time_to_live": 600, **section}}


def test_the_vapid_key_an_app_passes_to_its_distributor_is_served_before_registration(platforms):
    r = requests.get(platforms.server.url(f"/device_api/v1/instances/{platforms.instance_id()}/web-vapid-public-key"),
                     timeout=5)
    assert r.status_code == 200 and r.json() == {"vapidPublicKey": platforms.vapid_public_key}, r.text


def test_one_publish_reaches_apns_fcm_web_and_unifiedpush_devices_exactly_once(platforms):
    interest = unique("four")
    ios = [random_token() for _ in range(2)]
    android = [fcm_token() for _ in range(2)]
    for token in ios:
        platforms.register("apns", token, [interest])
    for token in android:
        platforms.register("fcm", token, [interest])
    browsers = [platforms.browser([interest])[0] for _ in range(2)]
    phones = [platforms.phone([interest], flavour)[0] for flavour in ("ntfy", "nextpush", "autopush")]

    body = publish_body(interest)
    body["unifiedpush"] = {"notification": {"title": "Goal", "body": "1-0"}, "data": {"match": 42},
                           "time_to_live": 600, "urgency": "high", "topic": "match42"}
    publish_id = platforms.client.publish("interests", body)
    status = platforms.client.wait_finished(publish_id)

    assert status["targets"] == 9, status
    assert (status["apns"]["accepted"], status["fcm"]["accepted"], status["web"]["accepted"],
            status["unifiedpush"]["accepted"]) == (2, 2, 2, 3), status
    assert status["unifiedpush"]["failed"] == 0 and status["unifiedpush"]["failedByReason"] == {}, status
    for token in ios:
        assert len(platforms.apns.requests_for(token)) == 1
    for token in android:
        assert len([r for r in platforms.fcm.requests(token) if r["status"] == 200]) == 1
    for browser in browsers:
        assert len(platforms.push.messages(browser["id"])) == 1
    for phone in phones:
        messages = platforms.push.messages(phone["id"])
        assert len(messages) == 1, (phone["flavour"], messages)
        message = messages[0]
        assert (message["ttl"], message["urgency"], message["topic"]) == (600, "high", "match42"), message
        assert message["vapid"]["k"] == platforms.vapid_public_key
        assert message["vapid"]["claims"]["sub"] == "mailto:ops@example.com"
        assert json.loads(message["plaintext"]) == {
            "notification": {"title": "Goal", "body": "1-0"},
            "data": {"match": 42, "pusher": {"instanceId": platforms.instance_id(), "publishId": publish_id,
                                             "hasDisplayableContent": True, "hasData": True}},
        }
    # ntfy answered 200, NextPush and autopush 201: all three count as accepted.
    statuses = sorted(r["status"] for r in platforms.push.requests()
                      if r.get("subscription") in {p["id"] for p in phones})
    assert statuses == [200, 201, 201], statuses


def test_each_push_server_answer_has_its_effect(platforms):
    interest = unique("answers")
    _, gone_404 = platforms.phone([interest], "autopush", marker="gone-404")
    _, gone_410 = platforms.phone([interest], "autopush", marker="gone-410")
    _, too_large = platforms.phone([interest], "autopush", marker="too-large")
    unavailable, unavailable_id = platforms.phone([interest], "autopush", marker="unavailable", retry_after="1",
                                                  marker_times=1)
    limited, limited_id = platforms.phone([interest], "ntfy", marker="rate-limited", retry_after="1", marker_times=1)
    no_subscriber, no_subscriber_id = platforms.phone([interest], "ntfy", marker="no-subscriber-507", marker_times=1)
    # A NextPush token the server no longer knows: 404.
    stale = platforms.push.subscribe(application_server_key=platforms.vapid_public_key, flavour="nextpush")
    stale["endpoint"] = stale["endpoint"].rsplit("/", 1)[0] + "/" + uuid.uuid4().hex
    stale_id = platforms.register_unifiedpush(stale, [interest])

    status = platforms.client.wait_finished(platforms.client.publish("interests", up_body(interest)), timeout=60)

    up = status["unifiedpush"]
    assert up["accepted"] == 3, status  # 503, 429 and 507 were retried once and then accepted
    assert up["failedByReason"] == {"SubscriptionGone": 3, "PayloadTooLarge": 1}, status
    assert up["devicesRemoved"] == 3, status
    for device_id in (gone_404, gone_410, stale_id):
        assert platforms.client.device(device_id)["invalidatedAt"], device_id
    for device_id in (too_large, unavailable_id, limited_id, no_subscriber_id):
        assert platforms.client.device(device_id)["invalidatedAt"] is None, device_id
    for phone in (unavailable, limited, no_subscriber):
        answers = [r["status"] for r in platforms.push.requests() if r.get("subscription") == phone["id"]]
        assert answers[-1] in (200, 201) and len(answers) == 2, (phone["flavour"], answers)


def test_a_users_publish_reaches_a_unifiedpush_device_bound_to_the_user_and_metadata_is_kept(platforms):
    phone, device_id = platforms.phone([], "nextpush")
    base = DEVICES.format(instance=platforms.instance_id()) + f"/unifiedpush/{device_id}"
    user = unique("up-user")
    r = platforms.client.session.put(platforms.server.url(f"{base}/user"), timeout=10, headers={
        "Authorization": f"Bearer {jwt_hs256(beams_claims(user))}"})
    assert r.status_code == 200, r.text
    r = platforms.client.session.get(platforms.server.url(base), timeout=10)
    assert r.status_code == 200 and r.json()["userId"] == user, r.text
    assert r.json()["metadata"]["distributor"] == "io.heckel.ntfy", r.text

    body = {"users": [user], "unifiedpush": {"notification": {"title": "For you"}, "time_to_live": 60}}
    status = platforms.client.wait_finished(platforms.client.publish("users", body))
    assert status["unifiedpush"]["accepted"] == 1, status
    [message] = platforms.push.messages(phone["id"])
    assert json.loads(message["plaintext"])["notification"] == {"title": "For you"}


def test_ntfy_507_until_the_retries_end_keeps_the_device_with_its_reason(platforms):
    interest = unique("ntfy507")
    _, device_id = platforms.phone([interest], "ntfy", marker="no-subscriber-507")
    status = platforms.client.wait_finished(platforms.client.publish("interests", up_body(interest)), timeout=60)
    assert status["unifiedpush"]["failedByReason"] == {"NoActiveSubscriber": 1}, status
    assert status["unifiedpush"]["devicesRemoved"] == 0
    assert platforms.client.device(device_id)["invalidatedAt"] is None


def test_a_too_large_unifiedpush_section_is_refused_at_intake(platforms):
    interest = unique("big")
    r = platforms.client.publish_raw("/interests", up_body(interest, data={"blob": "x" * 4000}))
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["error"] == "Unprocessable Entity" and "`unifiedpush`" in answer["description"], answer
    assert "at most 3993" in answer["description"], answer
    for section, path in (({"urgency": "urgent"}, "unifiedpush.urgency"), ({"topic": "no spaces"}, "unifiedpush.topic"),
                          ({"colour": "red"}, "unifiedpush.colour")):
        r = platforms.client.publish_raw("/interests", up_body(interest, **section))
        assert r.status_code == 422 and f"`{path}`" in r.json()["description"], r.text


def test_an_endpoint_update_moves_the_device_to_the_new_endpoint_and_keys(platforms):
    interest = unique("moved")
    old, device_id = platforms.phone([interest], "ntfy")
    new = platforms.push.subscribe(application_server_key=platforms.vapid_public_key, flavour="autopush")
    base = DEVICES.format(instance=platforms.instance_id())
    r = platforms.client.session.put(platforms.server.url(f"{base}/unifiedpush/{device_id}/endpoint"), json={
        "endpoint": new["endpoint"], "keys": {"p256dh": new["p256dh"], "auth": new["auth"]}}, timeout=10)
    assert r.status_code == 200, r.text
    r = platforms.client.session.put(platforms.server.url(f"{base}/fcm/{device_id}/endpoint"), json={
        "endpoint": new["endpoint"], "keys": {"p256dh": new["p256dh"], "auth": new["auth"]}}, timeout=10)
    assert r.status_code == 404, r.text

    status = platforms.client.wait_finished(platforms.client.publish("interests", up_body(interest)))
    assert status["unifiedpush"]["accepted"] == 1, status
    assert platforms.push.messages(old["id"]) == []
    assert len(platforms.push.messages(new["id"])) == 1


def _subscription(endpoint):
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": endpoint, "p256dh": b64url(point), "auth": b64url(uuid.uuid4().bytes)}


# Every spelling of a loopback, private, link-local, CGNAT, unique-local, unspecified or translated address.
REFUSED_ENDPOINTS = [
    "https://127.0.0.1/up1", "https://127.0.0.2/up1", "https://127.1/up1", "https://2130706433/up1",
    "https://0x7f000001/up1", "https://0177.0.0.1/up1", "https://0x7f.0.0.1/up1", "https://localhost/up1",
    "https://LOCALHOST./up1", "https://[::1]/up1", "https://[0:0:0:0:0:0:0:1]/up1", "https://[::ffff:127.0.0.1]/up1",
    "https://[::ffff:7f00:1]/up1", "https://[::ffff:10.0.0.1]/up1", "https://[::127.0.0.1]/up1",
    "https://[64:ff9b::7f00:1]/up1", "https://[64:ff9b::a9fe:a9fe]/up1", "https://[2002:7f00:1::1]/up1",
    "https://10.0.0.1/up1", "https://172.16.0.1/up1", "https://192.168.1.1/up1", "https://169.254.169.254/up1",
    "https://100.64.0.1/up1", "https://[fd00::1]/up1", "https://[fc00::1]/up1", "https://[fe80::1]/up1",
    "https://0.0.0.0/up1", "https://0/up1", "https://[::]/up1", "https://224.0.0.1/up1", "https://255.255.255.255/up1",
    # Not an address problem, but refused as well: another scheme, another port, credentials in the authority.
    "http://93.184.215.14/up1", "https://93.184.215.14:8443/up1", "https://user:pass@93.184.215.14/up1",
]


@pytest.mark.parametrize("endpoint", REFUSED_ENDPOINTS)
def test_every_private_or_loopback_spelling_is_refused_at_registration(platforms, endpoint):
    r = platforms.register_unifiedpush(_subscription(endpoint), instance=STRICT_INSTANCE_ID)
    assert r.status_code == 400, (endpoint, r.status_code, r.text)
    answer = r.json()
    assert answer["error"] == "Bad request" and "UnifiedPush" in answer["description"], answer
    if endpoint.startswith("https://") and "@" not in endpoint and ":8443" not in endpoint:
        # Judged on the address the name resolves to, whatever its spelling (a trailing-dot name may not resolve).
        assert "resolves to" in answer["description"] or "does not resolve" in answer["description"], answer


def test_the_loopback_stand_in_is_refused_on_an_instance_without_the_test_switch(platforms):
    # The stand-in itself (127.0.0.1) is refused on an instance without the test switch.
    subscription = platforms.push.subscribe(flavour="ntfy")
    r = platforms.register_unifiedpush(subscription, instance=STRICT_INSTANCE_ID)
    assert r.status_code == 400 and "loopback" in r.json()["description"], r.text


BLACK_HOLED = 80  # more than the window below


def sender_gauge(server, name):
    import re
    text = requests.get(server.url("/metrics"), timeout=5).text
    match = re.search(name + r'\{platform="unifiedpush"\} (\d+)', text)
    return int(match.group(1)) if match else 0


def test_a_black_holed_push_server_does_not_delay_another_hosts_delivery(tmp_path):
    """Users pick their push servers: one whose port drops every connection attempt (a listening socket never
    accepted, its one-entry queue full) holds at most its host's share of the instance's UnifiedPush window
    (`unifiedpush.maxInFlightPerHost`), so a publish to a phone on another host goes out at once. With the share as
    large as the window (the rule without per-host shares) the second publish waits for the black-holed attempts to
    time out (4 attempts × 3 s connect timeout plus backoff)."""
    black_hole = socket.socket()
    black_hole.bind(("127.0.0.2", 0))
    black_hole.listen(0)
    port = black_hole.getsockname()[1]
    env = None
    try:
        env = _build(tmp_path, overrides={"webPush": {"maxInFlight": 64, "maxInFlightPerService": 16},
                                          "limits": {"ipRequestsPerSecond": 0, "deviceRequestsPerSecondPerInstance": 0}},
                     unifiedpush={"maxInFlightPerHost": 8, "allowedDestinations": ["127.0.0.0/8"]})
        # The black-holed host's port must be allowed too.
        config = json.loads(env.server.config_path.read_text())
        config["instances"][0]["unifiedpush"]["ports"].append(port)
        env.server.config_path.write_text(json.dumps(config))
        env.server.kill9()
        env.server.start()

        bait = unique("bait")
        for _ in range(BLACK_HOLED):
            subscription = _subscription(f"https://127.0.0.2:{port}/wpush/v2/{uuid.uuid4().hex}")
            env.register_unifiedpush(subscription, [bait])
        healthy_interest = unique("healthy")
        phone, _ = env.phone([healthy_interest], "ntfy")

        env.client.publish("interests", up_body(bait))
        wait_for(lambda: sender_gauge(env.server, "push_sender_waiting_for_window") >= 1, timeout=30,
                 message="the black-holed notifications never filled their share")
        started = time.monotonic()
        env.client.publish("interests", up_body(healthy_interest))
        wait_for(lambda: env.push.messages(phone["id"]), timeout=30, interval=0.1,
                 message="the healthy host's notification waited behind the black-holed host's")
        # Generous on a loaded machine: milliseconds with per-host shares, over 10 s without.
        assert time.monotonic() - started < 5
    finally:
        if env is not None:
            env.server.kill9()  # a graceful stop would wait out the drain of the black-holed notifications
            for process in (env.apns, env.fcm, env.push):
                process.stop()
        black_hole.close()


def test_an_endpoint_registered_under_an_allowance_is_refused_at_connect_once_the_allowance_is_gone(tmp_path):
    """The address rules hold at every connect, not only at registration: the stand-in's loopback endpoint was
    accepted while the test switch allowed 127.0.0.1; with the switch removed, the stored device's delivery gets no
    socket (the address curl is about to connect to is judged) and the push server sees nothing."""
    env = _build(tmp_path)
    try:
        interest = unique("rebound")
        phone, device_id = env.phone([interest], "autopush")
        config = json.loads(env.server.config_path.read_text())
        del config["instances"][0]["unifiedpush"]["allowedDestinations"]
        env.server.config_path.write_text(json.dumps(config))
        env.server.stop()
        env.server.start()
        status = env.client.wait_finished(env.client.publish("interests", up_body(interest)), timeout=60)
        assert status["unifiedpush"]["failedByReason"] == {"DestinationRefused": 1}, status
        assert [r for r in env.push.requests() if r.get("subscription") == phone["id"]] == []
        assert env.client.device(device_id)["invalidatedAt"] is None
    finally:
        env.close()
