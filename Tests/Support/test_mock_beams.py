"""The Beams stand-in's rules over real TLS: what `mock_beams.py` refuses and answers (`beams_rules.py`)."""

from __future__ import annotations

import http.client
import json
import ssl
import time

import pytest

import beams_rules
from mock_process import MockProcess, _reset  # noqa: F401  (autouse fixture)

INSTANCE = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
SECRET = "upstream-secret"


@pytest.fixture(scope="module")
def mock():
    process = MockProcess("mock_beams.py", ["--instance-id", INSTANCE, "--secret-key", SECRET])
    yield process
    process.stop()


def call(mock: MockProcess, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
         conn: http.client.HTTPSConnection | None = None) -> tuple[int, dict, dict]:
    context = ssl.create_default_context(cafile=mock.ca_file)
    own = conn is None
    conn = conn or http.client.HTTPSConnection("127.0.0.1", mock.port, context=context, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    payload = json.loads(response.read())
    if own:
        conn.close()
    return response.status, payload, {k.lower(): v for k, v in response.getheaders()}


def publish(mock, body, kind="interests", secret=SECRET, instance=INSTANCE, content_type="application/json", conn=None):
    headers = {"Content-Type": content_type}
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return call(mock, "POST", f"/publish_api/v1/instances/{instance}/publishes/{kind}", data, headers, conn)


def test_auth_and_instance_are_checked_before_anything_else(mock):
    assert publish(mock, {}, instance="other")[0] == 404
    status, body, _ = publish(mock, {}, secret=None)
    assert status == 400 and body["description"] == "Authorization header is missing."
    status, body, _ = publish(mock, {"interests": ["a"], "apns": {}}, secret="wrong")
    assert (status, body) == (401, {"error": "Unauthorized", "description": "Incorrect Secret Key"})
    assert mock.control("GET", "/publishes") == []


def test_a_valid_publish_gets_a_publish_id_and_is_recorded(mock):
    status, body, _ = publish(mock, {"interests": ["a", "b"], "apns": {"aps": {}}})
    assert status == 200 and body["publishId"].startswith("pubid-")
    status, body2, _ = publish(mock, {"users": ["u1"], "fcm": {}}, kind="users")
    assert status == 200
    recorded = mock.control("GET", "/publishes")
    assert [(p["kind"], p["targets"], p["publish_id"]) for p in recorded] == [
        ("interests", ["a", "b"], body["publishId"]), ("users", ["u1"], body2["publishId"])]


@pytest.mark.parametrize("kind,body,status,fragment", [
    ("interests", {"interests": [], "apns": {}}, 422, "interests is required"),
    ("interests", {"interests": [f"i{n}" for n in range(101)], "apns": {}}, 422, "at most 100"),
    ("interests", {"interests": ["bad name"], "apns": {}}, 422, "Does not match pattern"),
    ("interests", {"interests": ["x" * 165], "apns": {}}, 422, "Does not match pattern"),
    ("interests", {"interests": ["a"]}, 422, "at least one of"),
    ("users", {"users": ["u", "u"], "apns": {}}, 422, "array items must be unique"),
    ("users", {"users": ["é" * 83], "apns": {}}, 422, "164 bytes"),
    ("users", {"users": [f"u{n}" for n in range(1001)], "apns": {}}, 422, "at most 1000"),
    ("interests", b"[1]", 400, "Failed to read body as a JSON object."),
])
def test_body_rules(mock, kind, body, status, fragment):
    got, answer, _ = publish(mock, body, kind=kind)
    assert got == status and fragment in answer["description"], answer


def test_bodies_over_10_kib_to_interests_or_200_kib_to_users_are_refused(mock):
    pad = {"interests": ["a"], "apns": {"data": {"x": ""}}}
    pad["apns"]["data"]["x"] = "y" * (10 * 1024 - len(json.dumps(pad)))
    assert len(json.dumps(pad)) == 10 * 1024 and publish(mock, pad)[0] == 200
    pad["apns"]["data"]["x"] += "y"
    status, answer, _ = publish(mock, pad)
    assert status == 400 and "too large" in answer["description"]
    big = {"users": ["u"], "apns": {"data": {"x": "y" * (150 * 1024)}}}
    assert publish(mock, big, kind="users")[0] == 200
    big["apns"]["data"]["x"] = "y" * (201 * 1024)
    assert publish(mock, big, kind="users")[0] == 400
    assert publish(mock, {"interests": ["a"], "apns": {}}, content_type="text/plain")[0] == 400


def test_the_rate_window_admits_100_requests_in_any_second_and_refuses_the_101st():
    window = beams_rules.RateWindow()
    assert all(window.admit(10.0 + i * 0.009) for i in range(100))
    assert not window.admit(10.95), "the 101st within one second"
    assert window.admit(11.001), "the first request has left the window"
    assert not window.admit(11.002)


def test_the_101st_request_within_a_second_gets_429_with_retry_after(mock):
    # 101 requests over one kept-alive connection: when all of them were answered within a second (timed by the
    # client, so the mock saw them within a second too), the first 100 must pass and the 101st must get 429. A run
    # that took longer proves nothing either way (a loaded machine); it waits for the window to empty and tries
    # again, and only when no attempt was fast enough is the test skipped, saying so.
    context = ssl.create_default_context(cafile=mock.ca_file)
    for _ in range(5):
        conn = http.client.HTTPSConnection("127.0.0.1", mock.port, context=context, timeout=10)
        conn.connect()
        started = time.monotonic()
        statuses = [publish(mock, {"interests": ["a"], "apns": {}}, conn=conn)[0] for _ in range(100)]
        status, answer, headers = publish(mock, {"interests": ["a"], "apns": {}}, conn=conn)
        elapsed = time.monotonic() - started
        conn.close()
        if elapsed < 1.0:
            assert statuses == [200] * 100
            assert status == 429 and headers.get("retry-after") == "1" and answer["error"] == "Rate Limited"
            return
        time.sleep(1.1)
    pytest.skip("no attempt sent 101 requests within a second on this machine")


def test_scripted_answers_replace_the_next_publishes_answers_after_auth(mock):
    mock.control("PUT", "/script", {"answers": [{"status": 402, "description": "over plan"},
                                                {"status": 503, "retry_after": 4}]})
    assert publish(mock, {}, secret="wrong")[0] == 401, "auth comes first and spends no scripted answer"
    status, answer, _ = publish(mock, {"interests": ["a"], "apns": {}})
    assert status == 402 and answer["description"] == "over plan"
    status, _, headers = publish(mock, {"interests": ["a"], "apns": {}})
    assert status == 503 and headers["retry-after"] == "4"
    assert publish(mock, {"interests": ["a"], "apns": {}})[0] == 200


def test_device_delete_needs_no_credentials_and_removes_a_registered_device(mock):
    mock.control("PUT", "/devices/apns/apns-1", {"interests": ["news"]})
    status, _, _ = call(mock, "DELETE", f"/device_api/v1/instances/{INSTANCE}/devices/apns/apns-1")
    assert status == 200
    status, answer, _ = call(mock, "DELETE", f"/device_api/v1/instances/{INSTANCE}/devices/apns/apns-1")
    assert status == 404 and answer["error"] == "Device not found"
    assert mock.control("GET", "/devices") == {}
    assert [d["device"] for d in mock.control("GET", "/deletes")] == ["apns/apns-1", "apns/apns-1"]


def test_a_publish_reaches_the_devices_still_registered_at_beams(mock):
    mock.control("PUT", "/devices/fcm/fcm-1", {"interests": ["news"]})
    mock.control("PUT", "/devices/web/web-1", {"user": "alice"})
    publish(mock, {"interests": ["news", "sport"], "fcm": {}})
    publish(mock, {"users": ["alice"], "web": {}}, kind="users")
    publish(mock, {"interests": ["sport"], "fcm": {}})
    assert mock.control("GET", "/delivered") == {"fcm/fcm-1": 1, "web/web-1": 1}
