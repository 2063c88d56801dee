"""Publish intake: Beams' statuses and texts for bad requests, the rate limit, platforms we do not deliver to."""
import json

import pytest

from beams import Beams, alert, random_token, unique
from conftest import NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET


@pytest.fixture(scope="module")
def beams(env):
    server, mock = env
    return Beams(server), mock


def error(response, status):
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) >= {"error", "description"}, body
    return body


def padded(kind, target, size):
    """A valid publish body of exactly `size` bytes (padding in `apns.data`)."""
    body = {kind: [target], "apns": {"aps": {"alert": "x"}, "data": {"pad": ""}}}
    base = len(json.dumps(body))
    body["apns"]["data"]["pad"] = "p" * (size - base)
    text = json.dumps(body)
    assert len(text) == size
    return text


def assert_body_limit(client, kind, target, kib):
    """A `kind` publish body of exactly `kib` KiB is accepted; one byte more is refused with Beams' message."""
    assert client.publish_raw(f"/{kind}", data=padded(kind, target, kib * 1024)).status_code == 200
    body = error(client.publish_raw(f"/{kind}", data=padded(kind, target, kib * 1024 + 1)), 400)
    assert body["description"].startswith("Request body size is too large"), body
    assert f"{kib}KiB" in body["description"]


def test_interests_body_limit_is_10_kib(beams):
    client, _ = beams
    assert_body_limit(client, "interests", unique("limit"), 10)


def test_users_body_limit_is_200_kib(beams):
    client, _ = beams
    assert_body_limit(client, "users", unique("user"), 200)


def test_wrong_secret_is_401(beams):
    client, _ = beams
    body = error(client.publish_raw("/interests", {"interests": ["a"], "apns": alert()}, secret="wrong"), 401)
    assert body["description"] == "Incorrect Secret Key"


def test_missing_authorization_is_400(beams):
    client, _ = beams
    body = error(client.publish_raw("/interests", {"interests": ["a"], "apns": alert()},
                                    headers={"Authorization": None}), 400)
    assert body["description"] == "Authorization header is missing"


def test_unknown_instance_is_404(beams):
    client, _ = beams
    body = error(client.publish_raw("/interests", {"interests": ["a"], "apns": alert()},
                                    instance_id="00000000-0000-4000-8000-000000000000"), 404)
    assert body["error"] == "Instance not found"


@pytest.mark.parametrize("kind,body,fragment", [
    ("interests", {"apns": {"aps": {}}}, "`interests`: interests is required"),
    ("interests", {"interests": [], "apns": {"aps": {}}}, "`interests`: Array must have at least 1 items"),
    ("interests", {"interests": [f"i{n}" for n in range(101)], "apns": {"aps": {}}},
     "`interests`: Array must have at most 100 items"),
    ("interests", {"interests": ["a b"], "apns": {"aps": {}}}, "`interests.0`: Does not match pattern"),
    ("interests", {"interests": ["ok", 5], "apns": {"aps": {}}}, "`interests.1`: Invalid type. Expected: string"),
    ("interests", {"interests": ["ok"]}, "`(root)`: at least one of apns, fcm or web is required"),
    ("interests", {"interests": ["ok"], "apns": []}, "`apns`: Invalid type. Expected: object, given: array"),
    ("interests", {"interests": ["ok"], "apns": {"aps": {}, "priority": 7}}, "`apns.priority`"),
    ("interests", {"interests": ["ok"], "apns": {"aps": {}, "collapse_id": "c" * 65}}, "`apns.collapse_id`"),
    ("interests", {"interests": ["ok"], "apns": {"aps": {}}, "webhookUrl": "ftp://x"}, "`webhookUrl`"),
    ("users", {"users": ["u1", "u2", "u1"], "apns": {"aps": {}}}, "`users`: array items must be unique"),
    ("users", {"users": ["x" * 165], "apns": {"aps": {}}}, "`users.0`"),
    ("users", {"users": [], "apns": {"aps": {}}}, "`users`: Array must have at least 1 items"),
])
def test_schema_violations_are_422_with_backticked_paths(beams, kind, body, fragment):
    client, _ = beams
    response = error(client.publish_raw(f"/{kind}", body), 422)
    assert fragment in response["description"], response


def test_non_json_content_type_is_400(beams):
    client, _ = beams
    body = error(client.publish_raw("/interests", {"interests": ["a"], "apns": alert()},
                                    headers={"Content-Type": "text/plain"}), 400)
    assert body["error"] == "Invalid content type"


def test_unreadable_json_is_400(beams):
    client, _ = beams
    body = error(client.publish_raw("/interests", data="{not json"), 400)
    assert body["description"] == "Failed to read body as a JSON object"


def test_legacy_publish_path_is_an_interests_publish(beams):
    client, mock = beams
    interest, token = unique("legacy"), random_token()
    client.register(token, [interest])
    response = client.publish_raw("", {"interests": [interest], "apns": alert()})
    assert response.status_code == 200, response.text
    status = client.wait_finished(response.json()["publishId"])
    assert status["kind"] == "interests" and status["apns"]["accepted"] == 1
    assert len(mock.requests_for(token)) == 1


def test_fcm_and_web_only_publish_skips_ios_devices_and_says_nothing_of_platforms_without_devices(beams):
    client, mock = beams
    interest, token = unique("fcmonly"), random_token()
    client.register(token, [interest])
    publish_id = client.publish("interests", {"interests": [interest],
                                              "fcm": {"notification": {"title": "t"}}, "web": {"notification": {}}})
    status = client.wait_finished(publish_id)
    # The instance has no fcm/web section, but the publish had no Android or web device: nothing to note (with
    # such devices it says so: test_fcm_auth_problems.py); the iOS device is no target.
    assert "summary" not in status, status
    assert status["targets"] == 0
    assert status["apns"]["accepted"] == 0
    assert mock.requests_for(token) == []


def test_apns_and_fcm_publish_delivers_apns_and_has_no_fcm_note_without_android_devices(beams):
    client, mock = beams
    interest, token = unique("mixed"), random_token()
    client.register(token, [interest])
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert(), "fcm": {"data": {}}})
    status = client.wait_finished(publish_id)
    assert status["apns"]["accepted"] == 1
    assert "summary" not in status and status["fcm"]["failedByReason"] == {}, status
    assert len(mock.requests_for(token)) == 1


def test_unknown_publish_id_is_404(beams):
    client, _ = beams
    r = client.session.get(client.server.url(f"/publish_api/v1/instances/{client.instance_id}/publishes/pubid-nope"),
                           headers={"Authorization": f"Bearer {client.secret}"}, timeout=5)
    assert r.status_code == 404


def test_status_needs_the_secret(beams):
    client, _ = beams
    publish_id = client.publish("interests", {"interests": [unique("auth")], "apns": alert()})
    r = client.session.get(client.server.url(f"/publish_api/v1/instances/{client.instance_id}/publishes/{publish_id}"),
                           headers={"Authorization": "Bearer wrong"}, timeout=5)
    assert r.status_code == 401


def test_instance_without_credentials_counts_no_apns_credentials_and_sends_nothing(beams):
    client, mock = beams
    other = Beams(client.server, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET)
    interest, tokens = unique("nocreds"), [random_token(), random_token()]
    for token in tokens:
        other.register(token, [interest])
    publish_id = other.publish("interests", {"interests": [interest], "apns": alert()})
    status = other.wait_finished(publish_id)
    assert status["targets"] == 2
    assert status["apns"]["failedByReason"] == {"NoAPNsCredentials": 2}, status
    assert status["apns"]["accepted"] == 0
    assert "no APNs credentials" in status["summary"]
    for token in tokens:
        assert mock.requests_for(token) == []


def test_rate_limit_answers_429_above_the_per_instance_rate(environment):
    mock = environment.mock()
    server = environment.server(mock, {"limits": {"requestsPerSecondPerInstance": 3}}, name="ratelimit")
    client = Beams(server)
    body = {"interests": [unique("rl")], "apns": alert()}
    statuses = [client.publish_raw("/interests", body).status_code for _ in range(10)]
    # A burst of 3 passes; the rest of a burst sent within well under a second is refused.
    assert statuses[:3] == [200, 200, 200], statuses
    assert 429 in statuses[3:], statuses
    refused = next(r for r in (client.publish_raw("/interests", body) for _ in range(5)) if r.status_code == 429)
    assert refused.json()["error"] == "Rate Limited"
    # The limit is per instance: the other instance is not affected.
    other = Beams(server, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET)
    assert other.publish_raw("/interests", body).status_code == 200


def test_json_content_type_with_charset_and_missing_content_type_are_accepted(beams):
    client, _ = beams
    body = {"interests": [unique("ct")], "apns": alert()}
    with_charset = client.publish_raw("/interests", body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert with_charset.status_code == 200, with_charset.text
    without = client.publish_raw("/interests", data=json.dumps(body).encode(), headers={"Content-Type": None})
    assert without.status_code == 200, without.text
