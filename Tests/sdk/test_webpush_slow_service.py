"""A push service that drops connection attempts holds a bounded share of the instance's Web Push window.

Anonymous browsers choose their endpoints. Six hundred subscriptions on an allowed push-service host whose port
drops every connection attempt (a listening socket that is never accepted: the kernel drops the SYNs once its
one-entry queue is full) used to fill the instance's whole window (512 slots, each held about 47 s: 4 attempts
× 10 s connect timeout plus backoff), so a notification to a healthy push service waited ~45 s for a free slot.
Now each push service has its share of the window (`webPush.maxInFlightPerService`) and the connect timeout is
short: the healthy service's notification goes out at once (docs/SECURITY.md, "Slow destinations").
"""
import base64
import json
import re
import socket
import time
import uuid

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from beams import Beams, unique, wait_for
from harness import INSTANCE_ID, Mock, Server, write_apns_key, write_vapid_key
from platform_mocks import MockPushService

DEVICES = f"/device_api/v1/instances/{INSTANCE_ID}/devices"
BLACK_HOLED = 600  # more than the old 512-slot window


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def web_token(endpoint, p256dh, auth):
    subscription = {"endpoint": endpoint, "expirationTime": None, "keys": {"p256dh": p256dh, "auth": auth}}
    return base64.b64encode(json.dumps(subscription).encode()).decode()


def web_gauge(server, name):
    text = requests.get(server.url("/metrics"), timeout=5).text
    match = re.search(name + r'\{platform="web"\} (\d+)', text)
    return int(match.group(1)) if match else 0


def peers(tmp_path, port):
    """The APNs and push-service stand-ins, the instance's `web` section allowing 127.0.0.2:`port` as a second push
    service, and the VAPID public key: (p8, apns, push, web, public key)."""
    p8, pub = write_apns_key(tmp_path)
    vapid, public_key = write_vapid_key(tmp_path)
    apns, push = Mock(tmp_path, pub), MockPushService(tmp_path)
    web = {**push.config(vapid), "allowedDestinations": ["127.0.0.0/8"]}
    web["pushServiceHosts"] = web["pushServiceHosts"] + [f"127.0.0.2:{port}"]
    return p8, apns, push, web, public_key


@pytest.fixture
def slow_service(tmp_path):
    # A second loopback address stands for a second push-service host; its port never accepts.
    black_hole = socket.socket()
    black_hole.bind(("127.0.0.2", 0))
    black_hole.listen(0)
    p8, apns, push, web, public_key = peers(tmp_path, black_hole.getsockname()[1])
    server = None
    try:
        server = Server(tmp_path, apns, p8, instance_overrides={"web": web},
                        limits={"deviceRequestsPerSecondPerInstance": 0})
        yield server, push, public_key, black_hole.getsockname()[1]
    finally:
        if server is not None:
            server.kill9()  # a graceful stop would wait out the drain of the black-holed notifications
        apns.stop()
        push.stop()
        black_hole.close()


def test_a_black_holed_push_service_does_not_delay_another_services_notification(slow_service):
    server, push, vapid_public_key, black_hole_port = slow_service
    client = Beams(server)
    session = client.session
    key = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    bait = unique("bait")
    for _ in range(BLACK_HOLED):
        endpoint = f"https://127.0.0.2:{black_hole_port}/push/{uuid.uuid4()}"
        r = session.post(server.url(f"{DEVICES}/web"), timeout=10,
                         json={"token": web_token(endpoint, b64url(key), b64url(uuid.uuid4().bytes)), "metadata": {}})
        assert r.status_code == 200, r.text
        r = session.put(server.url(f"{DEVICES}/web/{r.json()['id']}/interests"), json={"interests": [bait]}, timeout=10)
        assert r.status_code == 200, r.text

    healthy = unique("healthy")
    subscription = push.subscribe(application_server_key=vapid_public_key)
    r = session.post(server.url(f"{DEVICES}/web"), timeout=10, json={
        "token": web_token(subscription["endpoint"], subscription["p256dh"], subscription["auth"]), "metadata": {}})
    assert r.status_code == 200, r.text
    r = session.put(server.url(f"{DEVICES}/web/{r.json()['id']}/interests"), json={"interests": [healthy]}, timeout=10)
    assert r.status_code == 200, r.text

    client.publish("interests", {"interests": [bait], "web": {"notification": {"title": "bait"}}})
    # The black-holed service's notifications hold every slot they may (the whole window before the fix) and the
    # rest of them wait for one.
    wait_for(lambda: web_gauge(server, "push_sender_waiting_for_window") >= 1, timeout=30,
             message="the black-holed notifications never filled their share")

    started = time.monotonic()
    client.publish("interests", {"interests": [healthy], "web": {"notification": {"title": "urgent"}}})
    wait_for(lambda: push.messages(subscription["id"]), timeout=20, interval=0.1,
             message="the healthy service's notification waited behind the black-holed service's")
    # Generous on a loaded machine: it waited ~45 s for a slot before the fix, and takes milliseconds now.
    assert time.monotonic() - started < 10


def test_a_subscription_whose_deliveries_go_unanswered_is_invalidated_with_a_reason(tmp_path):
    """A push-service port that refuses connections: the sender's retries end without an answer, and (with the
    streak shortened to one delivery here; 3 over at least an hour by default) the subscription is removed with
    the reason `SubscriptionUnreachable`, as a 410 removes it with `SubscriptionGone`."""
    closed = socket.socket()
    closed.bind(("127.0.0.2", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now: every connection attempt is refused
    p8, apns, push, web, _ = peers(tmp_path, port)
    server = None
    try:
        server = Server(tmp_path, apns, p8, instance_overrides={"web": web},
                        overrides={"webPush": {"unreachableAfterFailures": 1, "unreachableAfterSeconds": 0}})
        client = Beams(server)
        key = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        endpoint = f"https://127.0.0.2:{port}/push/{uuid.uuid4()}"
        r = client.session.post(server.url(f"{DEVICES}/web"), timeout=10, json={
            "token": web_token(endpoint, b64url(key), b64url(uuid.uuid4().bytes)), "metadata": {}})
        assert r.status_code == 200, r.text
        device_id = r.json()["id"]
        interest = unique("unreachable")
        r = client.session.put(server.url(f"{DEVICES}/web/{device_id}/interests"), json={"interests": [interest]},
                               timeout=10)
        assert r.status_code == 200, r.text
        publish_id = client.publish("interests", {"interests": [interest], "web": {"notification": {"title": "t"}}})
        status = client.wait_finished(publish_id, timeout=60)
        assert status["web"]["failedByReason"] == {"SubscriptionUnreachable": 1}, status
        assert status["web"]["devicesRemoved"] == 1, status
        device = client.device(device_id)
        assert device["invalidatedAt"], device
        assert device["lastDelivery"]["reason"] == "SubscriptionUnreachable", device
        # Not tried again.
        assert client.wait_finished(client.publish("interests", {"interests": [interest], "web": {}}))["targets"] == 0
    finally:
        if server is not None:
            server.stop()
        apns.stop()
        push.stop()
