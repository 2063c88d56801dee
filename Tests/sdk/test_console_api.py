"""The console's routes over real sockets (the release binary, TLS, the strict mock APNs): off by default, the page's
security headers, the secret on its JSON endpoints, hostile test-push bodies answered with Beams 4xx JSON, Apple's
answer field by field, the per-instance test-push rate, and the overview's counts."""
import time
import uuid

import pytest
import requests

from beams import Beams, random_token, unique, wait_for
from harness import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET, SECRET

CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
PAGES = {
    "/console": "text/html; charset=utf-8",
    "/console/": "text/html; charset=utf-8",
    "/console/app.js": "text/javascript; charset=utf-8",
    "/console/app.css": "text/css; charset=utf-8",
    "/favicon.ico": "image/x-icon",
}
BASE = f"/admin_api/v1/instances/{INSTANCE_ID}/console"


@pytest.fixture(scope="module")
def console(environment):
    mock = environment.mock()
    # The test-push limit has its own server below; here tests that each send a few test pushes in a row must not
    # share the default 5 per second (they did, and one got a 429 on a loaded machine).
    server = environment.server(mock, overrides={"console": {"enabled": True, "testPushesPerSecond": 1000}},
                                name="console")
    yield server, mock


def session(server):
    s = requests.Session()
    s.trust_env = False
    s.verify = server.cert
    return s


def auth(secret=SECRET):
    return {"Authorization": f"Bearer {secret}"}


def test_push(s, server, body, secret=SECRET, instance=INSTANCE_ID, **headers):
    return s.post(server.url(f"/admin_api/v1/instances/{instance}/console/test-push"), json=body,
                  headers={**auth(secret), **headers}, timeout=30)


test_push.__test__ = False  # a helper, not a test


def test_the_console_is_off_by_default_and_its_paths_are_plain_404s(env):
    server, mock = env
    s = session(server)
    unknown = s.get(server.url("/no-such-path"), timeout=10)
    assert unknown.status_code == 404
    for path in PAGES:
        r = s.get(server.url(path), timeout=10)
        assert (r.status_code, r.text) == (404, unknown.text), path
        assert "Content-Security-Policy" not in r.headers
    assert s.get(server.url(f"{BASE}/overview"), headers=auth(), timeout=10).text == unknown.text
    before = len(mock.requests())
    r = test_push(s, server, {"deviceToken": random_token()})
    assert (r.status_code, r.text) == (404, unknown.text)
    assert len(mock.requests()) == before


def test_page_and_files_carry_the_security_headers_and_exact_content_types(console):
    server, _ = console
    s = session(server)
    for path, content_type in PAGES.items():
        r = s.get(server.url(path), timeout=10)
        assert r.status_code == 200, path
        assert r.headers["Content-Type"] == content_type
        assert r.headers["Content-Security-Policy"] == CSP
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "no-referrer"
        assert r.headers["Cache-Control"] == ("no-store" if content_type.startswith("text/html") else "no-cache")
        assert not [h for h in r.headers if h.lower().startswith("access-control-")], "no CORS: no foreign page may call"
        etag = r.headers["ETag"]
        again = s.get(server.url(path), headers={"If-None-Match": etag}, timeout=10)
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["ETag"] == etag
    page = s.get(server.url("/console"), timeout=10).text
    assert '<script src="/console/app.js" defer></script>' in page
    assert "<script>" not in page and "style=" not in page


def test_the_json_endpoints_need_the_instance_secret(console):
    server, mock = console
    s = session(server)
    before = len(mock.requests())
    for method, path, body in (("GET", f"{BASE}/overview", None), ("POST", f"{BASE}/test-push", {"deviceToken": random_token()})):
        missing = s.request(method, server.url(path), json=body, timeout=10)
        assert (missing.status_code, missing.json()) == (400, {"error": "Incomplete Request",
                                                               "description": "Authorization header is missing"})
        wrong = s.request(method, server.url(path), json=body, headers=auth("x" * len(SECRET)), timeout=10)
        assert (wrong.status_code, wrong.json()) == (401, {"error": "Unauthorized", "description": "Incorrect Secret Key"})
        other = s.request(method, server.url(path), json=body, headers=auth(NO_CREDENTIALS_SECRET), timeout=10)
        assert other.status_code == 401, "another instance's secret opens nothing here"
        unknown = s.request(method, server.url(path.replace(INSTANCE_ID, str(uuid.uuid4()))), json=body,
                            headers=auth(), timeout=10)
        assert (unknown.status_code, unknown.json()["error"]) == (404, "Instance not found")
    assert len(mock.requests()) == before
    # A preflight gets no CORS grant, so a foreign page cannot send the Authorization header at all.
    r = s.options(server.url(f"{BASE}/test-push"), headers={"Origin": "https://evil.example",
                                                          "Access-Control-Request-Method": "POST"}, timeout=10)
    assert r.status_code in (404, 405) and "Access-Control-Allow-Origin" not in r.headers


@pytest.mark.parametrize("body, status, description", [
    ({}, 422, "`deviceToken`: deviceToken is required"),
    ({"deviceToken": 12}, 422, "`deviceToken`: Invalid type. Expected: string, given: integer"),
    ({"deviceToken": "zz" * 32}, 422, "`deviceToken`: must be hexadecimal: an even number of digits, 16 to 400 (got 64 characters)"),
    ({"deviceToken": "abc" * 11}, 422, "`deviceToken`: must be hexadecimal: an even number of digits, 16 to 400 (got 33 characters)"),
    ({"deviceToken": "ab" * 201}, 422, "`deviceToken`: must be hexadecimal: an even number of digits, 16 to 400 (got 402 characters)"),
    ({"deviceToken": "ab" * 32, "environment": "staging"}, 422, "`environment`: must be sandbox or production"),
    ({"deviceToken": "ab" * 32, "priority": 7}, 422, "`priority`: must be 10, 5 or 1"),
    ({"deviceToken": "ab" * 32, "priority": "10"}, 422, "`priority`: Invalid type. Expected: integer, given: string"),
    ({"deviceToken": "ab" * 32, "pushType": "loud"}, 422, None),
    ({"deviceToken": "ab" * 32, "payload": [1]}, 422, "`payload`: Invalid type. Expected: object, given: array"),
    ({"deviceToken": "ab" * 32, "payload": "{not json"}, 422, "`payload`: must be a JSON object"),
    ({"deviceToken": "ab" * 32, "alert": "a", "payload": {"aps": {}}}, 422, "`payload`: give an alert or a payload, not both"),
    ({"deviceToken": "ab" * 32, "expiration": -1}, 422, "`expiration`: must be UNIX seconds (0 or more)"),
    ({"deviceToken": "ab" * 32, "expiration": 1e30}, 422, "`expiration`: Invalid type. Expected: integer, given: number"),
    ({"deviceToken": "ab" * 32, "collapseId": "c" * 65}, 422, "`collapseId`: must be at most 64 bytes"),
    ({"deviceToken": "ab" * 32, "token": "x"}, 422, None),
])
def test_hostile_test_push_bodies_get_beams_json_errors_and_send_nothing(console, body, status, description):
    server, mock = console
    s = session(server)
    before = len(mock.requests())
    r = test_push(s, server, body)
    assert r.status_code == status, r.text
    assert set(r.json()) == {"error", "description"}
    if description:
        assert r.json()["description"] == description
    assert len(mock.requests()) == before


@pytest.mark.parametrize("topic, push_type", [
    ("com.other.app", None),                    # another app of the same Apple team
    ("com.other.app.voip", "voip"),
    ("com.other.app", "voip"),                  # becomes com.other.app.voip
    ("com.example.sdktest.evil", None),         # the instance's id as a prefix is not its topic
    ("com.example", None),
])
def test_console_test_push_goes_only_to_the_instances_own_topics(console, topic, push_type):
    """The console's test push takes an instance secret, but the `.p8` key signs for every app of the team: a topic
    outside the instance's own is refused (422) and nothing reaches APNs."""
    server, mock = console
    s = session(server)
    before = len(mock.requests())
    body = {"deviceToken": random_token(), "topic": topic, **({"pushType": push_type} if push_type else {})}
    r = test_push(s, server, body)
    assert r.status_code == 422, r.text
    assert r.json()["description"].startswith("`topic`: must be one of this instance's topics (com.example.sdktest"), r.text
    assert len(mock.requests()) == before


def test_malformed_test_push_requests_are_refused_before_any_parsing(console):
    server, mock = console
    s = session(server)
    url = server.url(f"{BASE}/test-push")
    before = len(mock.requests())
    cases = [
        (b"{", {"Content-Type": "application/json"}, 400, "Failed to read body as a JSON object"),
        (b"[1]", {"Content-Type": "application/json"}, 400, "Failed to read body as a JSON object"),
        (b'{"deviceToken":"ab"}', {"Content-Type": "text/plain"}, 400, "Only application/json is supported"),
        (b'{"deviceToken":"' + b"a" * 20_000 + b'"}', {"Content-Type": "application/json"}, 400,
         "Request body size is too large (max 16KiB)"),
    ]
    for data, headers, status, description in cases:
        r = s.post(url, data=data, headers={**auth(), **headers}, timeout=10)
        assert (r.status_code, r.json()["description"]) == (status, description), r.text
    no_credentials = test_push(s, server, {"deviceToken": "ab" * 32}, secret=NO_CREDENTIALS_SECRET,
                               instance=NO_CREDENTIALS_INSTANCE_ID)
    assert no_credentials.status_code == 422
    assert no_credentials.json()["description"].startswith("`instance`: has no APNs credentials")
    assert len(mock.requests()) == before


def test_test_push_answers_with_apples_fields_and_leaves_the_device_untouched(console):
    server, mock = console
    s = session(server)
    beams = Beams(server)

    fresh = random_token()
    r = test_push(s, server, {"deviceToken": fresh.upper(), "alert": "hello", "priority": 5, "collapseId": "c1",
                              "expiration": 2_000_000_000})
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "no-store"
    body = r.json()
    sent = mock.requests_for(fresh)
    assert len(sent) == 1
    assert sent[0]["payload"] == {"aps": {"alert": "hello"}}
    assert (sent[0]["headers"]["apns-priority"], sent[0]["headers"]["apns-collapse-id"],
            sent[0]["headers"]["apns-expiration"]) == ("5", "c1", "2000000000")
    answer = body["answer"]
    assert (answer["status"], answer["reason"], answer["failure"]) == (200, None, None)
    assert answer["apnsId"] == sent[0]["apns_id"] == body["apnsIdSent"]
    assert answer["apnsUniqueId"], "the sandbox answers with apns-unique-id"
    assert (body["environment"], body["deviceToken"], body["topic"], body["pushType"], body["priority"]) == (
        "sandbox", fresh, "com.example.sdktest", "alert", 5)
    assert (body["teamId"], body["keyId"], body["device"]) == ("TEAM123456", "KEY1234567", None)
    assert body["apnsHost"].startswith("https://127.0.0.1:") and body["latencyMs"] >= 0

    # A registered device whose token APNs says died after its registration: Apple's 410 with the timestamp, and
    # the device card says the registration is older. The test push changes nothing in the store.
    dead = random_token()
    device_id = beams.register(dead, environment="sandbox")
    later = int(time.time() * 1000) + 60_000
    mock.behave(dead, status=410, reason="Unregistered", timestamp=later)
    body = test_push(s, server, {"deviceToken": dead, "payload": '{"aps":{"alert":"x"}, "custom":1}'}).json()
    assert mock.requests_for(dead)[0]["payload"] == {"aps": {"alert": "x"}, "custom": 1}
    answer = body["answer"]
    assert (answer["status"], answer["reason"], answer["timestamp"]) == (410, "Unregistered", later)
    assert answer["meaning"].startswith("The app was removed")
    assert body["device"]["id"] == device_id and body["device"]["registeredAfterTimestamp"] is False
    card = beams.device(device_id)
    assert (card["valid"], card["lastDelivery"]) == (True, None), "diagnostic only: the store is unchanged"

    # Apple's 400 for the wrong environment, verbatim, with its meaning.
    wrong = random_token()
    mock.behave(wrong, status=400, reason="BadDeviceToken")
    body = test_push(s, server, {"deviceToken": wrong, "environment": "production"}).json()
    assert (body["environment"], body["answer"]["status"], body["answer"]["reason"]) == ("production", 400, "BadDeviceToken")
    assert "other environment" in body["answer"]["meaning"]

    # A request APNs would refuse is refused locally, with Apple's reason, and never sent.
    local = random_token()
    body = test_push(s, server, {"deviceToken": local, "payload": {"aps": {"content-available": 1}},
                                 "pushType": "background", "priority": 10}).json()
    assert (body["answer"]["status"], body["answer"]["reason"]) == (None, "BadPriority")
    assert body["answer"]["failure"].startswith("not sent")
    assert mock.requests_for(local) == []


def test_test_pushes_are_rate_limited_per_instance(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"console": {"enabled": True, "testPushesPerSecond": 1}},
                                name="console-limited")
    s = session(server)
    answers = [test_push(s, server, {"deviceToken": random_token()}) for _ in range(3)]
    assert answers[0].status_code == 200
    limited = [r for r in answers[1:] if r.status_code == 429]
    assert limited, [r.status_code for r in answers]
    assert limited[0].json() == {"error": "Rate Limited", "description": "Too many requests being made in quick succession"}
    assert mock.stats()["requests"] == 3 - len(limited)


def test_overview_counts_devices_publishes_failures_and_notifications_per_minute(console):
    server, mock = console
    s = session(server)
    beams = Beams(server)

    def overview():
        r = s.get(server.url(f"{BASE}/overview"), headers=auth(), timeout=10)
        assert r.status_code == 200, r.text
        assert r.headers["Cache-Control"] == "no-store"
        return r.json()

    before = overview()
    interest = unique("ov")
    tokens = beams.register_devices(4, [interest], environment="sandbox")
    mock.behave(tokens[0], status=410, reason="Unregistered")
    status = beams.wait_finished(beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "x"}}}))
    assert (status["apns"]["accepted"], status["apns"]["failed"]) == (3, 1)

    after = wait_for(lambda: (lambda o: o if o["devices"]["invalid"] == before["devices"]["invalid"] + 1 else None)(overview()))
    assert after["devices"]["total"] == before["devices"]["total"] + 4
    assert after["devices"]["byPlatform"]["apns"] == after["devices"]["total"]
    today, earlier = after["today"], before["today"]
    assert today["publishes"] == earlier["publishes"] + 1
    assert today["accepted"] == earlier["accepted"] + 3
    assert today["failedByReason"]["Unregistered"] == earlier["failedByReason"].get("Unregistered", 0) + 1
    assert today["devicesRemoved"] == earlier["devicesRemoved"] + 1
    assert today["since"].endswith("T00:00:00.000Z")
    series = after["perMinute"]
    assert len(series) == 60 and series == sorted(series, key=lambda m: m["start"])
    assert sum(m["accepted"] for m in series) >= sum(m["accepted"] for m in before["perMinute"]) + 3
    assert after["apns"]["state"] == "reachable"
    assert after["instance"] == {**after["instance"], "id": INSTANCE_ID, "apnsCredentials": "loaded",
                                 "topic": "com.example.sdktest", "defaultEnvironment": "sandbox"}
    assert after["store"]["ok"] is True


def test_console_test_push_accepts_the_instances_topic_with_any_push_type_suffix(console):
    server, mock = console
    s = session(server)
    for topic, push_type, sent in [("com.example.sdktest", None, "com.example.sdktest"),
                                   ("com.example.sdktest", "voip", "com.example.sdktest.voip"),
                                   ("com.example.sdktest.voip", "voip", "com.example.sdktest.voip")]:
        token = random_token()
        body = {"deviceToken": token, "topic": topic, **({"pushType": push_type} if push_type else {})}
        r = test_push(s, server, body)
        assert r.status_code == 200 and r.json()["topic"] == sent, r.text
        assert mock.requests_for(token)[0]["headers"]["apns-topic"] == sent


def test_overview_names_the_signed_in_keys_scopes_so_the_page_offers_only_those_actions(console):
    server, _ = console
    s = session(server)
    full = s.get(server.url(f"{BASE}/overview"), headers=auth(), timeout=10)
    assert full.status_code == 200, full.text
    assert full.json()["session"] == {"keyId": None, "beamsSecret": True, "scopes": sorted(
        ["console", "customer", "devices:read", "instance:admin", "publish", "publish:read"])}

    created = s.post(server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/keys"), headers=auth(), timeout=10,
                     json={"label": "console only", "scopes": ["console"]})
    assert created.status_code == 201, created.text
    key = created.json()
    narrow = s.get(server.url(f"{BASE}/overview"), headers=auth(key["key"]), timeout=10)
    assert narrow.status_code == 200, narrow.text
    assert narrow.json()["session"] == {"keyId": key["id"], "beamsSecret": False, "scopes": ["console"]}
    # The key's secret is never echoed back.
    assert key["key"] not in narrow.text
