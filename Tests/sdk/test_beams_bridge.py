"""The Beams bridge end to end (docs/MIGRATING.md "The bridge"): while devices move from Pusher Beams, every publish
accepted here is also sent to Beams, and a device that moved is retired at Beams. The real binary against the
strict stand-in of the Beams publish API and device DELETE (Tests/Support/mock_beams.py: secret, body and interest
limits, 100 requests/s then 429, scripted 402/5xx/429 with Retry-After) and the strict mock APNs.

A forward is matched to its local publish by `apns.collapse_id`: with the bridge on, both carry the local publish
id there (BeamsBridgeBody), so a phone registered at both shows one of the two.
"""
import datetime
import json
import time
import uuid

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import (CONTROL_TIMEOUT, INSTANCE_ID, KEY_ID, SECRET, TEAM_ID, TOPIC, Mock, Server, free_port,
                     write_apns_key, write_self_signed)
from platform_mocks import SUPPORT, _start

BEAMS_SECRET = "beams-upstream-secret-key-0123456789ABCDEF"
# A second local instance with the bridge configured but switched off; it forwards to the same Beams instance.
OFF_INSTANCE_ID = "8a1c7e52-3b4d-4f6e-9a0b-2c3d4e5f6a7b"
OFF_SECRET = "sdk-test-secret-bridge-off-0123456789"


class MockBeams:
    """The strict Beams stand-in and its control API."""

    def __init__(self, directory):
        self.proc, info = _start([str(SUPPORT / "mock_beams.py"), "--port", "0", "--instance-id", INSTANCE_ID,
                                  "--secret-key", BEAMS_SECRET], directory / "mock_beams.log")
        self.base_url, self.ca_file = info["base_url"], info["ca_file"]
        self.control = f"http://127.0.0.1:{info['control_port']}"

    def bridge(self, **extra):
        """An instance's `beamsBridge` section pointing at the stand-in."""
        return {"secretKey": BEAMS_SECRET, "baseURL": self.base_url, "caFile": self.ca_file, **extra}

    def get(self, path):
        r = requests.get(f"{self.control}{path}", timeout=CONTROL_TIMEOUT)
        r.raise_for_status()
        return r.json()

    def put(self, path, body):
        requests.put(f"{self.control}{path}", json=body, timeout=CONTROL_TIMEOUT).raise_for_status()

    def script(self, *answers):
        self.put("/script", {"answers": list(answers)})

    def forwards_of(self, publish_id):
        """The publishes Beams took whose body carries `publish_id` as its collapse id."""
        return [p for p in self.get("/publishes") if p["body"].get("apns", {}).get("collapse_id") == publish_id]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def bridge(tmp_path_factory):
    directory = tmp_path_factory.mktemp("e2e-beams-bridge")
    cert, key = write_self_signed(directory)
    p8, pub = write_apns_key(directory)
    env = type("Env", (), {})()
    env.directory, env.cert, env.key, env.p8 = directory, cert, key, p8
    env.apns, env.beams = Mock(directory, pub), MockBeams(directory)
    # The local publish rate limit out of the way: one test queues 150 publishes at once.
    env.server = Server(directory, env.apns, p8, cert, key, instance_overrides={"beamsBridge": env.beams.bridge()},
                        limits={"requestsPerSecondPerInstance": 100_000},
                        extra_instances=[{"id": OFF_INSTANCE_ID, "secretKey": OFF_SECRET,
                                          "beamsBridge": env.beams.bridge(instanceId=INSTANCE_ID, enabled=False)}])
    env.client = Beams(env.server)
    yield env
    for process in (env.server, env.apns, env.beams):
        try:
            process.stop()
        except Exception:  # noqa: BLE001  (clean-up must reach every process)
            process.proc.kill()


def forward_state(client, publish_id, states=("delivered", "failed"), timeout=20):
    """The publish's `beamsBridge` once it is in one of `states`."""
    def ended():
        forward = client.status(publish_id).get("beamsBridge")
        return forward if forward and forward["state"] in states else None
    return wait_for(ended, timeout=timeout, message=f"forward of {publish_id} did not reach {states}")


def register(client, token, interests, beams_device_id=None, instance=INSTANCE_ID):
    body = {"token": token, "bundleIdentifier": "com.example.sdktest", "metadata": {"sdkVersion": "4.0.0"}}
    if beams_device_id is not None:
        body["beamsDeviceId"] = beams_device_id
    base = client.server.url(f"/device_api/v1/instances/{instance}/devices/apns")
    r = client.session.post(base, json=body, timeout=10)
    assert r.status_code == 200, r.text
    device = r.json()["id"]
    r = client.session.put(f"{base}/{device}/interests", json={"interests": list(interests)}, timeout=10)
    assert r.status_code == 200, r.text
    return device


def test_a_publish_is_delivered_here_and_forwarded_to_beams_once_with_its_publish_id(bridge):
    interest, token = unique("bridge"), random_token()
    register(bridge.client, token, [interest])
    publish_id = bridge.client.publish("interests", {"interests": [interest], "apns": alert()})
    bridge.client.wait_finished(publish_id)
    forward = forward_state(bridge.client, publish_id)
    assert forward["state"] == "delivered" and forward["attempts"] == 1, forward
    taken = bridge.beams.forwards_of(publish_id)
    assert len(taken) == 1, taken
    assert forward["publishId"] == taken[0]["publish_id"] and taken[0]["targets"] == [interest]
    assert taken[0]["body"]["apns"]["aps"] == alert()["aps"]
    # Locally: one notification, with the same collapse id as the copy Beams took.
    sent = bridge.apns.requests_for(token)
    assert len(sent) == 1 and sent[0]["headers"]["apns-collapse-id"] == publish_id, sent
    time.sleep(1.5)  # nothing more is sent later (no retry of a delivered forward)
    assert len(bridge.beams.forwards_of(publish_id)) == 1
    metrics = bridge.client.session.get(bridge.server.url("/metrics"), timeout=10).text
    assert 'push_beams_bridge_total{kind="publish",outcome="delivered"}' in metrics


def test_an_instance_created_at_run_time_with_a_bridge_gets_its_publishes_forwarded(bridge):
    admin_key = "admin-key-for-bridged-instances-0123456789abcdef"
    directory = bridge.directory / "runtime-bridge"
    directory.mkdir()
    # No config-file instance has a bridge: only the run-time one does.
    server = Server(directory, bridge.apns, bridge.p8, bridge.cert, bridge.key, overrides={
        "keys": {"encryptionKey": "bridged-instances-encryption-key-0123456789"},
        "admin": {"keys": [{"id": "ops", "key": admin_key}]}})
    try:
        instance_id, secret = str(uuid.uuid4()), "runtime-bridge-secret-" + uuid.uuid4().hex
        apns = {"teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(bridge.p8), "topic": TOPIC,
                "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{bridge.apns.port}",
                "caFile": bridge.apns.ca_file}
        r = requests.post(server.url("/admin_api/v1/server/instances"), verify=server.cert, timeout=10,
                          headers={"Authorization": f"Bearer {admin_key}"},
                          json={"id": instance_id, "secretKey": secret, "apns": apns,
                                "beamsBridge": bridge.beams.bridge(instanceId=INSTANCE_ID)})
        assert r.status_code == 201, r.text
        client = Beams(server, instance_id, secret)
        interest, token = unique("runtime-bridge"), random_token()
        register(client, token, [interest], instance=instance_id)
        publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
        forward = forward_state(client, publish_id)
        assert forward["state"] == "delivered" and forward["attempts"] == 1, forward
        assert len(bridge.beams.forwards_of(publish_id)) == 1
    finally:
        server.stop()


def test_a_users_publish_is_forwarded_to_the_users_endpoint(bridge):
    user = unique("user")
    publish_id = bridge.client.publish("users", {"users": [user], "apns": alert()})
    forward = forward_state(bridge.client, publish_id)
    assert forward["state"] == "delivered", forward
    taken = bridge.beams.forwards_of(publish_id)
    assert len(taken) == 1 and taken[0]["kind"] == "users" and taken[0]["targets"] == [user], taken


def test_a_429_with_retry_after_is_retried_after_it_and_then_delivered(bridge):
    bridge.beams.script({"status": 429, "retry_after": 2})
    started = time.time()
    publish_id = bridge.client.publish("interests", {"interests": [unique("retry")], "apns": alert()})
    forward = forward_state(bridge.client, publish_id, timeout=30)
    assert forward["state"] == "delivered" and forward["attempts"] == 2, forward
    assert time.time() - started >= 2, "the retry came before Retry-After"
    assert len(bridge.beams.forwards_of(publish_id)) == 1


def test_a_503_is_retried_and_then_delivered(bridge):
    bridge.beams.script({"status": 503})
    publish_id = bridge.client.publish("interests", {"interests": [unique("retry")], "apns": alert()})
    forward = forward_state(bridge.client, publish_id, timeout=30)
    assert forward["state"] == "delivered" and forward["attempts"] == 2, forward


@pytest.mark.parametrize("status,description", [
    (400, "Failed to read body as a JSON object."),
    (402, "Publishing has been blocked due to being over plan limits"),
])
def test_a_refusal_is_not_retried_and_recorded_with_beams_description(bridge, status, description):
    bridge.beams.script({"status": status, "description": description})
    before = bridge.beams.get("/stats")["requests"]
    publish_id = bridge.client.publish("interests", {"interests": [unique("refused")], "apns": alert()})
    forward = forward_state(bridge.client, publish_id)
    assert forward["state"] == "failed" and forward["attempts"] == 1, forward
    assert f"HTTP {status}" in forward["error"] and description in forward["error"], forward
    assert "publishId" not in forward
    time.sleep(2.5)  # a retry would have come after 1 s
    assert bridge.beams.get("/stats")["requests"] == before + 1
    assert bridge.client.status(publish_id)["beamsBridge"]["attempts"] == 1


def test_a_body_over_beams_limit_is_recorded_as_failed_and_not_sent(bridge):
    """A 10,200-byte publish fits here (10 KiB) but not at Beams once the collapse id is added: the bridge does not
    send what Beams would refuse, and says why; the local publish is unaffected."""
    names = [f"big{i:02d}-" + "x" * 140 for i in range(64)]
    body = {"interests": names, "apns": alert()}
    pad = 10_200 - len(json.dumps(body, separators=(",", ":")))
    for i in range(len(names)):  # spread over the names, each at most 164 characters
        grow = min(pad, 164 - len(names[i]))
        names[i] += "y" * grow
        pad -= grow
    data = json.dumps(body, separators=(",", ":"))
    assert len(data) == 10_200 and max(map(len, names)) <= 164
    before = len(bridge.beams.get("/publishes"))
    r = bridge.client.publish_raw("/interests", data=data)
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    forward = forward_state(bridge.client, publish_id)
    assert forward["state"] == "failed" and "body_too_large" in forward["error"] and "10 KiB" in forward["error"], forward
    assert len(bridge.beams.get("/publishes")) == before
    bridge.client.wait_finished(publish_id)


def test_with_the_bridge_off_nothing_is_forwarded_or_retired(bridge):
    off = Beams(bridge.server, instance_id=OFF_INSTANCE_ID, secret=OFF_SECRET)
    before_publishes, before_deletes = len(bridge.beams.get("/publishes")), len(bridge.beams.get("/deletes"))
    beams_device = f"apns-{uuid.uuid4()}"
    register(off, random_token(), [unique("off")], beams_device_id=beams_device, instance=OFF_INSTANCE_ID)
    publish_id = off.publish("interests", {"interests": [unique("off")], "apns": alert()})
    status = wait_for(lambda: (s := off.status(publish_id))["status"] in ("finished", "failed") and s)
    assert "beamsBridge" not in status, status
    time.sleep(1.5)
    assert len(bridge.beams.get("/publishes")) == before_publishes
    assert len(bridge.beams.get("/deletes")) == before_deletes


def test_a_device_that_moved_is_retired_at_beams_and_gets_one_notification_not_two(bridge):
    """How "one, not two" is established: the stand-in keeps the devices still registered at Beams and counts what
    each would receive from every publish Beams takes (`/delivered`), as the strict mock APNs counts what
    push-server sends to each token. The phone is registered at Beams (its Beams device id follows `interest`),
    then registers here with that id; once Beams has retired it, a publish reaches the phone once through
    push-server and zero times through Beams, although Beams took the forwarded publish."""
    interest, token = unique("moved"), random_token()
    beams_device = f"apns-{uuid.uuid4()}"
    bridge.beams.put(f"/devices/apns/{beams_device}", {"interests": [interest]})
    register(bridge.client, token, [interest], beams_device_id=beams_device)
    wait_for(lambda: any(d["device"] == f"apns/{beams_device}" for d in bridge.beams.get("/deletes")),
             message="the Beams device was not retired")
    assert f"apns/{beams_device}" not in bridge.beams.get("/devices")
    deletes = [d for d in bridge.beams.get("/deletes") if d["device"] == f"apns/{beams_device}"]
    assert len(deletes) == 1 and deletes[0]["authorization"] is None, deletes  # no credentials on the device API
    # The app registers again at its next launch, with the same Beams id: no second DELETE.
    register(bridge.client, token, [interest], beams_device_id=beams_device)

    publish_id = bridge.client.publish("interests", {"interests": [interest], "apns": alert()})
    bridge.client.wait_finished(publish_id)
    assert forward_state(bridge.client, publish_id)["state"] == "delivered"
    assert len(bridge.beams.forwards_of(publish_id)) == 1
    assert len(bridge.apns.requests_for(token)) == 1
    assert bridge.beams.get("/delivered").get(f"apns/{beams_device}", 0) == 0
    time.sleep(1)
    assert len([d for d in bridge.beams.get("/deletes") if d["device"] == f"apns/{beams_device}"]) == 1


def test_a_device_still_at_beams_is_reached_through_the_forward(bridge):
    """The other half: a device that has not moved gets the publish from Beams (the reason for the bridge)."""
    interest = unique("stayed")
    beams_device = f"fcm-{uuid.uuid4()}"
    bridge.beams.put(f"/devices/fcm/{beams_device}", {"interests": [interest]})
    publish_id = bridge.client.publish("interests", {"interests": [interest], "apns": alert()})
    assert forward_state(bridge.client, publish_id)["state"] == "delivered"
    assert bridge.beams.get("/delivered").get(f"fcm/{beams_device}") == 1


def test_a_backlog_of_forwards_is_sent_under_beams_100_per_second(bridge):
    """A 429 with `Retry-After: 3` pauses the bridge; the 150 publishes accepted meanwhile are all due when the pause
    ends, and the stand-in (which answers the 101st request within a second with 429) sees no other 429."""
    before = bridge.beams.get("/stats")["by_status"].get("429", 0)
    bridge.beams.script({"status": 429, "retry_after": 3})
    interest = unique("burst")
    ids = [bridge.client.publish("interests", {"interests": [interest], "apns": alert()})]
    wait_for(lambda: bridge.client.status(ids[0])["beamsBridge"]["attempts"] == 1, message="no first attempt")
    ids += [bridge.client.publish("interests", {"interests": [interest], "apns": alert()}) for _ in range(149)]
    for publish_id in ids:
        assert forward_state(bridge.client, publish_id, timeout=60)["state"] == "delivered"
    assert bridge.beams.get("/stats")["by_status"].get("429", 0) == before + 1, "the bridge went over 100 requests/s"


def test_a_forward_accepted_before_a_kill_9_is_sent_once_after_the_restart(bridge, tmp_path):
    """The forward is queued with the publish: the first server cannot reach Beams (its base URL is a closed port),
    is killed with SIGKILL, and the restarted one, pointed at the stand-in, sends it exactly once."""
    closed = f"https://127.0.0.1:{free_port()}"
    server = Server(tmp_path, bridge.apns, bridge.p8, bridge.cert, bridge.key,
                    instance_overrides={"beamsBridge": bridge.beams.bridge(baseURL=closed)})
    try:
        client = Beams(server)
        publish_id = client.publish("interests", {"interests": [unique("crash")], "apns": alert()})
        pending = forward_state(client, publish_id, states=("pending",))
        wait_for(lambda: client.status(publish_id)["beamsBridge"]["attempts"] >= 1, message="no attempt was made")
        assert pending["state"] == "pending"
        server.kill9()
        config = json.loads(server.config_path.read_text())
        config["instances"][0]["beamsBridge"]["baseURL"] = bridge.beams.base_url
        server.config_path.write_text(json.dumps(config))
        server.start()
        forward = forward_state(client, publish_id, timeout=30)
        assert forward["state"] == "delivered", forward
        time.sleep(1.5)
        assert len(bridge.beams.forwards_of(publish_id)) == 1
    finally:
        server.stop()


def test_a_re_pointed_app_registering_a_known_token_gets_its_interests_back(bridge):
    """The server side of an iOS app's first launch against push-server (docs/MIGRATING.md Step 2): the iOS SDK
    adopts `initialInterestSet` as its local interests, so a token push-server already holds (registered before, or
    imported) must come back with its interests, not `[]`; a token new here gets `[]` (the migration patch keeps the
    app's own then)."""
    token, interests = random_token(), sorted([unique("kept"), unique("kept")])
    register(bridge.client, token, interests)
    body = {"token": token, "bundleIdentifier": "com.example.sdktest", "metadata": {"sdkVersion": "4.0.0"},
            "beamsDeviceId": f"apns-{uuid.uuid4()}"}
    r = bridge.client.session.post(bridge.server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                                   json=body, timeout=10)
    assert r.status_code == 200 and sorted(r.json()["initialInterestSet"]) == interests, r.text
    body["token"] = random_token()
    r = bridge.client.session.post(bridge.server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                                   json=body, timeout=10)
    assert r.status_code == 200 and r.json()["initialInterestSet"] == [], r.text


def test_forwards_waiting_when_the_bridge_is_switched_off_are_recorded_as_failed_not_sent(bridge, tmp_path):
    closed = f"https://127.0.0.1:{free_port()}"
    server = Server(tmp_path, bridge.apns, bridge.p8, bridge.cert, bridge.key,
                    instance_overrides={"beamsBridge": bridge.beams.bridge(baseURL=closed)})
    try:
        client = Beams(server)
        publish_id = client.publish("interests", {"interests": [unique("switched")], "apns": alert()})
        wait_for(lambda: client.status(publish_id)["beamsBridge"]["attempts"] >= 1, message="no attempt was made")
        server.stop()
        config = json.loads(server.config_path.read_text())
        config["instances"][0]["beamsBridge"].update(baseURL=bridge.beams.base_url, enabled=False)
        server.config_path.write_text(json.dumps(config))
        server.start()
        forward = forward_state(client, publish_id, timeout=30)
        assert forward["state"] == "failed" and forward["error"].startswith("bridge_off"), forward
        assert bridge.beams.forwards_of(publish_id) == []
    finally:
        server.stop()


def test_a_scheduled_publish_is_forwarded_at_its_time_without_push_server_extensions(bridge):
    """Beams has no `x_delivery`: the copy waits in the store until the publish's start moment, then goes without the
    extension (or `webhookUrl`, which push-server calls itself); a scheduled publish cancelled before its time is
    not forwarded."""
    send_at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=3)
    stamp = send_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    body = {"interests": [unique("later")], "apns": alert(), "x_delivery": {"sendAt": stamp}}
    publish_id = bridge.client.publish("interests", body)
    cancelled_id = bridge.client.publish("interests", body)
    r = bridge.client.session.delete(
        bridge.server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/{cancelled_id}"),
        headers={"Authorization": f"Bearer {SECRET}"}, timeout=10)
    assert r.status_code == 200, r.text
    time.sleep(1)
    assert bridge.beams.forwards_of(publish_id) == [] and bridge.client.status(publish_id)["beamsBridge"]["state"] == "pending"
    forward = forward_state(bridge.client, publish_id, timeout=30)
    assert forward["state"] == "delivered" and datetime.datetime.now(datetime.timezone.utc) >= send_at, forward
    taken = bridge.beams.forwards_of(publish_id)
    assert len(taken) == 1 and "x_delivery" not in taken[0]["body"], taken
    cancelled = forward_state(bridge.client, cancelled_id)
    assert cancelled["state"] == "failed" and cancelled["error"].startswith("cancelled"), cancelled
    assert bridge.beams.forwards_of(cancelled_id) == []
