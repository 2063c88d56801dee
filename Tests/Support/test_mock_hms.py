"""The HMS stand-in's rules over real TLS: what `mock_hms.py` refuses and answers (`hms_rules.py`)."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse

import pytest

from mock_process import MockProcess, _reset  # noqa: F401  (autouse fixture)

APP_ID = "100200300"
SECRET = "s3cret+/="


@pytest.fixture(scope="module")
def mock():
    process = MockProcess("mock_hms.py", ["--app-id", APP_ID, "--client-secret", SECRET])
    yield process
    process.stop()


def post(mock: MockProcess, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    context = ssl.create_default_context(cafile=mock.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", mock.port, context=context, timeout=10)
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    payload = json.loads(response.read())
    conn.close()
    return response.status, payload


def token(mock: MockProcess, secret: str = SECRET, client_id: str = APP_ID) -> tuple[int, dict]:
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret})
    return post(mock, "/oauth2/v3/token", form.encode(), {"Content-Type": "application/x-www-form-urlencoded"})


def send(mock: MockProcess, message: dict, bearer: str | None = None, app_id: str = APP_ID) -> tuple[int, dict]:
    if bearer is None:
        bearer = token(mock)[1]["access_token"]
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {bearer}"}
    return post(mock, f"/v1/{app_id}/messages:send", json.dumps({"validate_only": False, "message": message}).encode(),
                headers)


def test_token_refused_for_a_wrong_secret_or_client_and_issued_for_the_right_ones(mock):
    status, body = token(mock, secret="wrong")
    assert status == 400 and body["sub_error"] == 12304
    status, body = token(mock, client_id="999")
    assert status == 400 and body["sub_error"] == 12303
    status, body = token(mock)
    assert status == 200 and body["token_type"] == "Bearer" and body["expires_in"] == 3600 and "/" in body["access_token"]
    assert mock.control("GET", "/stats")["token_requests"] == 3


def test_send_without_a_token_it_issued_is_80200001_and_an_expired_one_80200003(mock):
    assert send(mock, {"token": ["a"], "data": "x"}, bearer="forged")[1]["code"] == "80200001"
    bearer = token(mock)[1]["access_token"]
    mock.control("POST", "/expire-tokens")
    status, body = send(mock, {"token": ["a"], "data": "x"}, bearer=bearer)
    assert (status, body["code"]) == (401, "80200003")


def test_another_apps_url_is_80300002(mock):
    assert send(mock, {"token": ["a"], "data": "x"}, app_id="1")[1]["code"] == "80300002"


def test_token_count_and_body_size_limits(mock):
    assert send(mock, {"token": [f"t{i}" for i in range(1001)], "data": "x"})[1]["code"] == "80300010"
    assert send(mock, {"token": [], "data": "x"})[1]["code"] == "80300010"
    assert send(mock, {"token": [f"t{i}" for i in range(1000)], "data": "x"})[1]["code"] == "80000000"
    assert send(mock, {"token": ["a"], "data": "x" * 4100})[1]["code"] == "80300008"


def test_field_rules(mock):
    assert send(mock, {"token": ["a"], "data": {"k": 1}})[1]["code"] == "80100001"
    assert send(mock, {"token": ["a"], "topic": "t", "data": "x"})[1]["code"] == "80100001"
    assert send(mock, {"token": ["a"], "notification": {"title": "t"}})[1]["code"] == "80100003"
    assert send(mock, {"token": ["a"], "android": {"notification": {"click_action": {"type": 1}}}})[1]["code"] == "80100003"
    ok = {"token": ["a"], "notification": {"title": "t"}, "android": {"notification": {"click_action": {"type": 3}}}}
    assert send(mock, ok)[1]["code"] == "80000000"


def test_partial_success_lists_exactly_the_illegal_tokens_and_delivers_the_rest(mock):
    status, body = send(mock, {"token": ["good-1", "illegal-2", "good-3"], "data": "x"})
    assert (status, body["code"]) == (200, "80100000")
    detail = json.loads(body["msg"])
    assert detail == {"success": 2, "failure": 1, "illegal_tokens": ["illegal-2"]}
    assert mock.control("GET", "/delivered") == {"good-1": 1, "good-3": 1}
    assert send(mock, {"token": ["illegal-9"], "data": "x"})[1]["code"] == "80300007"


def test_scripted_answers_replace_the_next_requests(mock):
    mock.control("PUT", "/script", {"answers": [{"status": 503}, {"code": "81000001"}]})
    assert send(mock, {"token": ["a"], "data": "x"})[0] == 503
    assert send(mock, {"token": ["a"], "data": "x"})[1]["code"] == "81000001"
    assert send(mock, {"token": ["a"], "data": "x"})[1]["code"] == "80000000"
    assert mock.control("GET", "/delivered") == {"a": 1}
