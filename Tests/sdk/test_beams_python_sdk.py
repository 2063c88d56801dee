"""The official Beams Python server SDK (pusher-push-notifications 2.0.2), unmodified, against our TLS listener."""
import time
import uuid

import pytest
import requests
from pusher_push_notifications import PushNotifications, PusherAuthError, PusherValidationError

from conftest import INSTANCE_ID, SECRET


def register(server, token, interests=()):
    response = requests.post(
        server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
        json={"token": token, "bundleIdentifier": "com.example.sdktest", "metadata": {"sdkVersion": "4.0.0"}},
        verify=server.cert, timeout=5,
    )
    assert response.status_code == 200, response.text
    device_id = response.json()["id"]
    for interest in interests:
        r = requests.post(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}/interests/{interest}"),
                          verify=server.cert, timeout=5)
        assert r.status_code == 200, r.text
    return device_id


def sdk(server):
    client = PushNotifications(instance_id=INSTANCE_ID, secret_key=SECRET, endpoint=f"localhost:{server.port}")
    client.session.verify = server.cert  # the SDK ignores REQUESTS_CA_BUNDLE; session.verify works
    return client


def wait_for(predicate, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def random_token():
    return uuid.uuid4().hex + uuid.uuid4().hex


def test_publish_to_interests_reaches_the_device_with_pusher_ids(env):
    server, mock = env
    token = random_token()
    register(server, token, ["sdk-news"])
    response = sdk(server).publish_to_interests(
        interests=["sdk-news"], publish_body={"apns": {"aps": {"alert": {"title": "T", "body": "B"}}, "data": {"k": "v"}}})
    publish_id = response["publishId"]
    assert publish_id.startswith("pubid-")
    seen = wait_for(lambda: [r for r in mock.requests() if r["token"] == token])
    assert len(seen) == 1
    payload = seen[0]["payload"]
    assert payload["aps"]["alert"] == {"title": "T", "body": "B"}
    assert payload["aps"]["content-available"] == 1
    assert payload["data"]["pusher"] == {"instanceId": INSTANCE_ID, "publishId": publish_id}
    assert payload["data"]["k"] == "v"
    assert seen[0]["status"] == 200


def test_publish_to_users_and_generate_token_accepted_by_put_user(env):
    server, mock = env
    token = random_token()
    device_id = register(server, token)
    client = sdk(server)
    beams_token = client.generate_token("sdk-user-1")["token"]
    r = requests.put(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}/user"),
                     headers={"Authorization": f"Bearer {beams_token}"}, verify=server.cert, timeout=5)
    assert r.status_code == 200, r.text
    publish_id = client.publish_to_users(["sdk-user-1"], {"apns": {"aps": {"alert": "for you"}}})["publishId"]
    seen = wait_for(lambda: [r for r in mock.requests() if r["token"] == token])
    assert seen[0]["payload"]["data"]["pusher"]["publishId"] == publish_id


def test_delete_user_removes_their_devices(env):
    server, _ = env
    device_id = register(server, random_token())
    client = sdk(server)
    beams_token = client.generate_token("user with/odd?chars")["token"]
    r = requests.put(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}/user"),
                     headers={"Authorization": f"Bearer {beams_token}"}, verify=server.cert, timeout=5)
    assert r.status_code == 200, r.text
    client.delete_user("user with/odd?chars")
    r = requests.get(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}"), verify=server.cert, timeout=5)
    assert r.status_code == 404


def test_wrong_secret_raises_the_sdks_auth_error(env):
    server, _ = env
    client = PushNotifications(instance_id=INSTANCE_ID, secret_key="wrong", endpoint=f"localhost:{server.port}")
    client.session.verify = server.cert
    with pytest.raises(PusherAuthError):
        client.publish_to_interests(["x"], {"apns": {"aps": {"alert": "x"}}})


def test_schema_errors_raise_the_sdks_validation_error(env):
    server, _ = env
    client = sdk(server)
    # The SDK validates names itself; a body without any platform passes its checks and reaches our 422.
    with pytest.raises(PusherValidationError):
        client.publish_to_interests(["x"], {"nope": {}})
