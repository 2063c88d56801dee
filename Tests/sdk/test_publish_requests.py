"""Publish → exactly the right APNs requests at the strict mock: one per device, Apple's headers, Beams' payload."""
import os
import socket
import time

import pytest

from beams import Beams, alert, random_token, unique, wait_for
from conftest import INSTANCE_ID, KEY_ID, TEAM_ID, TOPIC
from receiver import Receiver


@pytest.fixture(scope="module")
def beams(env):
    server, mock = env
    return Beams(server), mock


def only_request(mock, token):
    seen = mock.requests_for(token)
    assert len(seen) == 1, seen
    return seen[0]


def test_interest_union_gets_one_request_per_device_with_headers_and_payload(beams):
    client, mock = beams
    i1, i2, i3 = unique("news"), unique("sport"), unique("weather")
    follows = {"a": [i1], "b": [i1, i2], "c": [i2], "d": [i2, i3, i1], "e": [i3], "f": []}
    tokens = {name: random_token() for name in follows}
    for name, interests in follows.items():
        client.register(tokens[name], interests)
    expiration = int(time.time()) + 3600
    publish_id = client.publish("interests", {
        "interests": [i1, i2, i1],
        "apns": alert("Hello", "World", data={"k": "v", "n": 1}, expiration=expiration, collapse_id="grp-1"),
    })

    status = client.wait_finished(publish_id)
    assert status["targets"] == 4
    assert status["apns"]["accepted"] == 4
    assert status["apns"]["failed"] == 0
    assert status["devicesRemoved"] == 0
    assert status["kind"] == "interests"

    for name in "abcd":
        request = only_request(mock, tokens[name])
        assert request["status"] == 200, request
        headers = request["headers"]
        assert headers["apns-topic"] == TOPIC
        assert headers["apns-push-type"] == "alert"
        assert headers["apns-priority"] == "10"
        assert headers["apns-expiration"] == str(expiration)
        assert headers["apns-collapse-id"] == "grp-1"
        assert headers["authorization"].startswith("bearer ")
        assert request["jwt"]["kid"] == KEY_ID and request["jwt"]["iss"] == TEAM_ID
        assert request["path"] == f"/3/device/{tokens[name]}"
        assert request["payload"] == {
            "aps": {"alert": {"title": "Hello", "body": "World"}, "content-available": 1},
            "data": {"pusher": {"instanceId": INSTANCE_ID, "publishId": publish_id}, "k": "v", "n": 1},
        }
    for name in "ef":
        assert mock.requests_for(tokens[name]) == []


def test_background_only_payload_goes_as_background_with_priority_5(beams):
    client, mock = beams
    interest, token = unique("bg"), random_token()
    client.register(token, [interest])
    # An explicit priority 10 on a background push would be refused by APNs for every device: sent with 5.
    publish_id = client.publish("interests", {"interests": [interest],
                                              "apns": {"aps": {"content-available": 1}, "priority": 10}})
    status = client.wait_finished(publish_id)
    assert status["apns"]["accepted"] == 1
    request = only_request(mock, token)
    assert request["status"] == 200
    assert request["headers"]["apns-push-type"] == "background"
    assert request["headers"]["apns-priority"] == "5"
    assert request["headers"]["apns-topic"] == TOPIC
    assert "apns-expiration" not in request["headers"]
    assert "apns-collapse-id" not in request["headers"]
    assert request["payload"]["aps"] == {"content-available": 1}
    assert request["payload"]["data"] == {"pusher": {"instanceId": INSTANCE_ID, "publishId": publish_id}}


def test_disabled_delivery_tracking_sends_aps_unchanged(beams):
    client, mock = beams
    interest, token = unique("notrack"), random_token()
    client.register(token, [interest])
    publish_id = client.publish("interests", {
        "interests": [interest],
        "apns": {"aps": {"alert": "plain", "badge": 3, "sound": "default"}, "pusher": {"disable_delivery_tracking": True},
                 "custom": {"x": 1}},
    })
    client.wait_finished(publish_id)
    request = only_request(mock, token)
    assert request["status"] == 200
    assert request["headers"]["apns-push-type"] == "alert"
    assert request["payload"]["aps"] == {"alert": "plain", "badge": 3, "sound": "default"}
    assert request["payload"]["custom"] == {"x": 1}
    assert "pusher" not in request["payload"]
    assert request["payload"]["data"]["pusher"]["publishId"] == publish_id


def test_explicit_voip_push_type_gets_topic_suffix(beams):
    client, mock = beams
    interest, token = unique("voip"), random_token()
    client.register(token, [interest])
    publish_id = client.publish("interests", {"interests": [interest],
                                              "apns": {"push_type": "voip", "aps": {}, "data": {"call": "42"}}})
    status = client.wait_finished(publish_id)
    assert status["apns"]["accepted"] == 1, status
    request = only_request(mock, token)
    assert request["headers"]["apns-topic"] == TOPIC + ".voip"
    assert request["headers"]["apns-push-type"] == "voip"
    assert request["payload"]["data"]["call"] == "42"


def test_users_publish_reaches_every_device_of_each_user(beams):
    client, mock = beams
    u1, u2, u3 = unique("user"), unique("user"), unique("user")
    tokens = {"u1a": random_token(), "u1b": random_token(), "u2": random_token(), "stranger": random_token()}
    client.register(tokens["u1a"], user=u1)
    client.register(tokens["u1b"], user=u1)
    client.register(tokens["u2"], user=u2)
    client.register(tokens["stranger"], user=unique("user"))
    publish_id = client.publish("users", {"users": [u1, u2, u3], "apns": alert("to", "users")})
    status = client.wait_finished(publish_id)
    assert status["kind"] == "users"
    assert status["targets"] == 3
    assert status["apns"]["accepted"] == 3
    for name in ("u1a", "u1b", "u2"):
        request = only_request(mock, tokens[name])
        assert request["status"] == 200
        assert request["payload"]["data"]["pusher"] == {"instanceId": INSTANCE_ID, "publishId": publish_id}
    assert mock.requests_for(tokens["stranger"]) == []


def test_publish_with_no_subscribers_finishes_with_zero_targets(beams):
    client, _ = beams
    publish_id = client.publish("interests", {"interests": [unique("empty")], "apns": alert()})
    status = client.wait_finished(publish_id)
    assert status["targets"] == 0
    assert status["apns"]["accepted"] == 0


def test_recent_publishes_lists_newest_first_with_states(beams):
    client, _ = beams
    interest = unique("recent")
    client.register(random_token(), [interest])
    ids = [client.publish("interests", {"interests": [interest], "apns": alert(str(n))}) for n in range(3)]
    for publish_id in ids:
        client.wait_finished(publish_id)
    listed = client.recent(limit=3)
    assert [p["publishId"] for p in listed] == list(reversed(ids))
    assert all(p["status"] == "finished" and p["apns"]["accepted"] == 1 for p in listed)
    assert "finishedAt" in listed[0] and "startedAt" in listed[0]


def test_explicit_priority_5_on_an_alert_is_kept(beams):
    client, mock = beams
    interest, token = unique("prio"), random_token()
    client.register(token, [interest])
    client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert(priority=5)}))
    request = only_request(mock, token)
    assert request["status"] == 200
    assert request["headers"]["apns-push-type"] == "alert"
    assert request["headers"]["apns-priority"] == "5"


def test_ready_reports_apns_reachable_after_an_answer(beams):
    client, _ = beams
    client.register(token := random_token(), [interest := unique("ready")])
    client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert()}))
    ready = client.session.get(client.server.url("/ready"), timeout=5).json()
    assert ready["ready"] is True
    assert ready["checks"]["apns"]["state"] == "reachable", ready
    assert ready["checks"]["apns"]["lastAnswerAt"] is not None
    assert token not in str(ready)


def test_proxy_variables_in_the_server_s_environment_are_ignored(environment):
    """docs/OPERATIONS.md: no outbound connection goes through a proxy. With `https_proxy` and its kin pointing at a
    listener (and no `no_proxy`) where the server starts, the push and its webhook still go straight to the mock and
    the receiver, and the listener is never connected to."""
    trap = socket.create_server(("127.0.0.1", 0))
    trap.setblocking(False)
    proxy = f"http://127.0.0.1:{trap.getsockname()[1]}"
    environ = {name: value for name, value in os.environ.items() if name.lower() != "no_proxy"}
    environ.update({name: proxy for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "all_proxy", "ALL_PROXY")})
    receiver = Receiver()
    try:
        mock = environment.mock()
        client = Beams(environment.server(mock, name="proxied", environ=environ))
        token, interest = random_token(), unique("proxied")
        client.register(token, [interest])
        publish_id = client.publish("interests", {"interests": [interest], "apns": alert(),
                                                  "webhookUrl": receiver.url()})
        client.wait_finished(publish_id)
        assert len(mock.requests_for(token)) == 1
        wait_for(lambda: receiver.bodies(publish_id), message="no webhook reached the receiver")
        with pytest.raises(BlockingIOError):
            trap.accept()
    finally:
        receiver.close()
        trap.close()
