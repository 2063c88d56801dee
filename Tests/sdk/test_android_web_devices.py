"""The Beams Android and Web SDKs' device API call sequences against the real release binary, over real sockets.

The sequences and the statuses each SDK needs are those of push-notifications-android (`api/PushNotificationService.kt`,
`PushNotificationsAPI.kt`, `internal/ServerSyncHandler.kt`) and push-notifications-web 2.1.0 (`push-notifications.js`,
`do-request.js`), summarised in docs/API.md ("Android" and "Browsers"): register answers `id` and
`initialInterestSet`, a refresh with an unknown device answers 404 "Device not found" (the SDK re-creates the device),
DELETE of an unknown device 200 (the SDK retries anything else forever), `InvalidToken` for a string that is not an FCM
registration token, and CORS headers on every answer of the anonymous routes, errors included.
"""
import base64
import json
import subprocess
import time
import uuid

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from beams_client import HTTP, assert_empty_ok, assert_error, b64url, beams_claims, jwt_hs256
from conftest import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, Mock, Server, write_apns_key, write_vapid_key

ANDROID_HEADERS = {"Content-Type": "application/json; charset=UTF-8",
                   "x-pusher-library": "push-notifications-android 1.9.2"}
WEB_ORIGIN = "https://app.example.com"
WEB_HEADERS = {"Content-Type": "application/json", "Origin": WEB_ORIGIN}
RESTRICTED_INSTANCE_ID = "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RESTRICTED_SECRET = "restricted-instance-secret-0123456789abcdef"
BASE = f"/device_api/v1/instances/{INSTANCE_ID}"


def fcm_token():
    """The shape of a registration token: `<installation id>:APA91b…` (about 160 characters)."""
    return b64url(uuid.uuid4().bytes)[:22] + ":APA91b" + b64url(uuid.uuid4().bytes * 7)[:134]


def subscription(endpoint=None):
    """What `PushSubscription.toJSON()` gives: an https endpoint and unpadded base64url keys."""
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": endpoint or f"https://fcm.googleapis.com/fcm/send/{uuid.uuid4()}",
            "expirationTime": None, "keys": {"p256dh": b64url(point), "auth": b64url(uuid.uuid4().bytes)}}


def btoa(value):
    """The Web SDK's `btoa(JSON.stringify(subscription))`: standard, padded base64."""
    return base64.b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("e2e-android-web")
    p8, pub = write_apns_key(directory)
    vapid, public_key = write_vapid_key(directory)
    assert (vapid.stat().st_mode & 0o777) == 0o600
    again = subprocess.run([Server.binary.fget(None), "vapid-keygen", str(vapid)], capture_output=True, text=True)
    assert again.returncode == 1 and "File exists" in again.stderr, again
    web = {"vapidKeyFile": str(vapid), "subject": "mailto:ops@example.com"}
    mock = Mock(directory, pub)
    srv = Server(directory, mock, p8, instance_overrides={"web": web}, extra_instances=[{
        "id": RESTRICTED_INSTANCE_ID, "secretKey": RESTRICTED_SECRET,
        "web": {**web, "allowedOrigins": [WEB_ORIGIN]}}])
    srv.vapid_public_key = public_key
    yield srv
    srv.stop()
    mock.stop()


@pytest.fixture()
def http(server):
    client = HTTP(server, keep_alive=True)
    yield client
    client.close()


# MARK: Android


def test_android_sdk_sequence_register_interests_refresh_user_delete(http):
    token = fcm_token()
    body = {"token": token, "knownPreviousClientIds": [], "metadata": {"sdkVersion": "1.9.2", "androidVersion": "14"}}
    r = http.request("POST", f"{BASE}/devices/fcm", body, ANDROID_HEADERS)
    assert r.status == 200, r
    answer = r.json()
    assert answer["initialInterestSet"] == [] and answer["id"].startswith("fcm-"), answer
    device = answer["id"]
    # Idempotent per token: the same phone registering again is the same device.
    again = http.request("POST", f"{BASE}/devices/fcm", {**body, "knownPreviousClientIds": ["old-client"]}, ANDROID_HEADERS)
    assert again.status == 200 and again.json()["id"] == device, again
    base = f"{BASE}/devices/fcm/{device}"
    # Bodiless calls come with no Content-Type (Retrofit).
    assert_empty_ok(http.request("POST", f"{base}/interests/news", b"", {"x-pusher-library": "push-notifications-android 1.9.2"}))
    assert_empty_ok(http.request("PUT", f"{base}/interests", {"interests": ["news", "sport"]}, ANDROID_HEADERS))
    assert_empty_ok(http.request("DELETE", f"{base}/interests/sport", b"", {}))
    assert_empty_ok(http.request("PUT", f"{base}/metadata", {"sdkVersion": "1.9.2", "androidVersion": "15"}, ANDROID_HEADERS))
    # Token refresh: the device keeps its id and interests; the old token is a new device afterwards.
    new_token = fcm_token()
    assert_empty_ok(http.request("PUT", f"{base}/token", {"token": new_token}, ANDROID_HEADERS))
    r = http.request("POST", f"{BASE}/devices/fcm", {**body, "token": new_token}, ANDROID_HEADERS)
    assert r.status == 200 and r.json() == {"id": device, "initialInterestSet": ["news"]}, r
    jwt = jwt_hs256(beams_claims("android-user"))
    assert_empty_ok(http.request("PUT", f"{base}/user", b"", {"Authorization": f"Bearer {jwt}"}))
    r = http.request("GET", base)
    assert r.status == 200 and r.json()["userId"] == "android-user", r
    assert_empty_ok(http.request("DELETE", base, b"", {}))
    # The SDK retries a DELETE that is not 2xx forever: an unknown device is 200 too.
    assert_empty_ok(http.request("DELETE", base, b"", {}))
    assert_empty_ok(http.request("DELETE", f"{BASE}/devices/fcm/fcm-never-existed", b"", {}))


def test_token_refresh_of_a_reinstalled_phone_leaves_one_device(http):
    first = http.request("POST", f"{BASE}/devices/fcm", {"token": fcm_token(), "metadata": {}}, ANDROID_HEADERS).json()["id"]
    shared = fcm_token()
    second = http.request("POST", f"{BASE}/devices/fcm", {"token": shared, "metadata": {}}, ANDROID_HEADERS).json()["id"]
    assert_empty_ok(http.request("PUT", f"{BASE}/devices/fcm/{first}/token", {"token": shared}, ANDROID_HEADERS))
    assert_error(http.request("GET", f"{BASE}/devices/fcm/{second}"), 404, "Could not find the device")
    r = http.request("POST", f"{BASE}/devices/fcm", {"token": shared, "metadata": {}}, ANDROID_HEADERS)
    assert r.json()["id"] == first, r


def test_token_refresh_cannot_take_the_token_of_a_device_bound_to_another_user(http):
    """Whoever learned a phone's token must not move it onto a device of their own user: the owner's device, its
    user and its interests stay; a refresh between devices of one user (a reinstall) still moves it."""
    def device(user):
        token = fcm_token()
        d = http.request("POST", f"{BASE}/devices/fcm", {"token": token, "metadata": {}}, ANDROID_HEADERS).json()["id"]
        if user:
            jwt = jwt_hs256(beams_claims(user))
            assert_empty_ok(http.request("PUT", f"{BASE}/devices/fcm/{d}/user", b"", {"Authorization": f"Bearer {jwt}"}))
        return d, token
    def conflicts():
        """`push_device_token_conflicts_total{platform="fcm"}` on /metrics (served to loopback peers)."""
        page = http.request("GET", "/metrics").body.decode()
        series = 'push_device_token_conflicts_total{platform="fcm"} '
        return next((float(line[len(series):]) for line in page.splitlines() if line.startswith(series)), 0.0)
    refused_before = conflicts()
    victim, victim_token = device("victim-" + uuid.uuid4().hex)
    assert_empty_ok(http.request("POST", f"{BASE}/devices/fcm/{victim}/interests/private", b"", {}))
    for thief_user in ["thief-" + uuid.uuid4().hex, None]:
        thief, _ = device(thief_user)
        r = http.request("PUT", f"{BASE}/devices/fcm/{thief}/token", {"token": victim_token}, ANDROID_HEADERS)
        assert_error(r, 400, "This token belongs to another device that is bound to another user")
        r = http.request("GET", f"{BASE}/devices/fcm/{victim}")
        assert r.status == 200 and r.json()["userId"].startswith("victim-"), r
        assert http.request("GET", f"{BASE}/devices/fcm/{victim}/interests").json()["interests"] == ["private"]
    # Both refusals are counted (docs/OPERATIONS.md, "Metrics").
    assert conflicts() == refused_before + 2
    # The victim's own re-registration still finds its device.
    r = http.request("POST", f"{BASE}/devices/fcm", {"token": victim_token, "metadata": {}}, ANDROID_HEADERS)
    assert r.json() == {"id": victim, "initialInterestSet": ["private"]}, r
    # Two devices of the same user: the refresh moves the token, one device is left.
    user = "same-" + uuid.uuid4().hex
    restored, _ = device(user)
    reinstalled, shared = device(user)
    assert_empty_ok(http.request("PUT", f"{BASE}/devices/fcm/{restored}/token", {"token": shared}, ANDROID_HEADERS))
    assert_error(http.request("GET", f"{BASE}/devices/fcm/{reinstalled}"), 404, "Could not find the device")


def test_unknown_device_sub_resources_answer_404_device_not_found(http):
    base = f"{BASE}/devices/fcm/fcm-{uuid.uuid4()}"
    jwt = jwt_hs256(beams_claims("someone"))
    for method, path, body, headers in [
        ("PUT", f"{base}/token", {"token": fcm_token()}, ANDROID_HEADERS),
        ("POST", f"{base}/interests/news", b"", {}),
        ("DELETE", f"{base}/interests/news", b"", {}),
        ("PUT", f"{base}/interests", {"interests": ["a"]}, ANDROID_HEADERS),
        ("PUT", f"{base}/metadata", {"sdkVersion": "1"}, ANDROID_HEADERS),
        ("PUT", f"{base}/user", b"", {"Authorization": f"Bearer {jwt}"}),
    ]:
        body_json = assert_error(http.request(method, path, body, headers), 404, "Could not find the device")
        assert body_json["error"] == "Device not found", (method, path, body_json)


@pytest.mark.parametrize("token", [
    "short", "a b c d e f g h i", "x" * 4097, "tok\u00e9n-not-ascii-at-all",
    # A Firebase installation auth token (what SDKs before 1.9.2 sent): a JWT, not a registration token.
    "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcHBJZCI6IjE6MTIzIn0.c2lnbmF0dXJlLWJ5dGVz",
])
def test_a_string_that_is_not_an_fcm_token_gets_invalid_token(http, token):
    r = http.request("POST", f"{BASE}/devices/fcm", {"token": token, "knownPreviousClientIds": [], "metadata": {}},
                     ANDROID_HEADERS)
    body = assert_error(r, 400, contains="not an FCM registration token")
    assert body["error"] == "InvalidToken", body
    device = http.request("POST", f"{BASE}/devices/fcm", {"token": fcm_token()}, ANDROID_HEADERS).json()["id"]
    r = http.request("PUT", f"{BASE}/devices/fcm/{device}/token", {"token": token}, ANDROID_HEADERS)
    assert assert_error(r, 400)["error"] == "InvalidToken"
    # Nothing was stored: the device kept its token.
    assert http.request("GET", f"{BASE}/devices/fcm/{device}").status == 200


def test_fcm_registration_needs_no_bundle_identifier_and_missing_token_is_400(http):
    assert_error(http.request("POST", f"{BASE}/devices/fcm", {"metadata": {}}, ANDROID_HEADERS), 400, "Missing token")
    assert_error(http.request("PUT", f"{BASE}/devices/fcm/fcm-x/token", {}, ANDROID_HEADERS), 400, "Missing token")


# MARK: Web


def test_web_sdk_sequence_vapid_key_register_interests_user_delete(http, server):
    r = http.request("GET", f"{BASE}/web-vapid-public-key", None, {"Origin": WEB_ORIGIN})
    assert r.status == 200 and r.json() == {"vapidPublicKey": server.vapid_public_key}, r
    assert r.headers["access-control-allow-origin"] == "*"
    point = base64.urlsafe_b64decode(server.vapid_public_key + "=")
    assert len(point) == 65 and point[0] == 4
    sub = subscription()
    r = http.request("POST", f"{BASE}/devices/web", {"token": btoa(sub), "metadata": {"sdkVersion": "2.1.0"}}, WEB_HEADERS)
    assert r.status == 200, r
    assert r.headers["access-control-allow-origin"] == "*"
    device = r.json()["id"]
    assert device.startswith("web-") and uuid.UUID(device[4:]), device
    # The same subscription in any base64 form (url alphabet, no padding) and with padded keys is the same device.
    padded_keys = {**sub, "keys": {k: v + "=" * (-len(v) % 4) for k, v in sub["keys"].items()}}
    for token in [btoa(sub).rstrip("="), b64url(json.dumps(sub).encode()), btoa(padded_keys)]:
        again = http.request("POST", f"{BASE}/devices/web", {"token": token, "metadata": {}}, WEB_HEADERS)
        assert again.status == 200 and again.json()["id"] == device, again
    base = f"{BASE}/devices/web/{device}"
    assert_empty_ok(http.request("POST", f"{base}/interests/hello", b"", {"Origin": WEB_ORIGIN}))
    assert_empty_ok(http.request("PUT", f"{base}/interests", {"interests": ["hello", "world"]}, WEB_HEADERS))
    r = http.request("GET", f"{base}/interests?limit=10", None, {"Origin": WEB_ORIGIN})
    assert r.json()["interests"] == ["hello", "world"], r
    assert_empty_ok(http.request("DELETE", f"{base}/interests/world", b"", {"Origin": WEB_ORIGIN}))
    jwt = jwt_hs256(beams_claims("web-user"))
    assert_empty_ok(http.request("PUT", f"{base}/user", b"", {"Origin": WEB_ORIGIN, "Authorization": f"Bearer {jwt}"}))
    r = http.request("DELETE", base, b"", {"Origin": WEB_ORIGIN})
    assert_empty_ok(r)
    assert r.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize("name,token", [
    ("not base64", "web-token"),
    ("not json", base64.b64encode(b"hello").decode()),
    ("http endpoint", btoa(subscription("http://push.example.net/x"))),
    ("short auth", btoa({**subscription(), "keys": {**subscription()["keys"], "auth": "AAAA"}})),
    ("not a point", btoa({**subscription(), "keys": {**subscription()["keys"], "p256dh": "BA" + "A" * 85}})),
    ("no keys", btoa({"endpoint": "https://push.example.net/x"})),
])
def test_web_token_that_is_not_a_subscription_gets_400_with_cors(http, name, token):
    r = http.request("POST", f"{BASE}/devices/web", {"token": token, "metadata": {}}, WEB_HEADERS)
    assert_error(r, 400, contains="not a valid web push subscription")
    assert r.headers["access-control-allow-origin"] == "*", name


@pytest.mark.parametrize("endpoint", [
    "https://169.254.169.254/latest/meta-data/",  # a cloud metadata address
    "https://127.0.0.1:8443/push",  # loopback, on a port no push service uses
    "https://push.internal/x",  # an internal name
    "https://fcm.googleapis.com:8443/fcm/send/x",  # a push service's host on a port that is not 443
    "https://fcm.googleapis.com.attacker.example/x",
])
def test_web_subscription_whose_endpoint_would_never_be_contacted_gets_400_and_is_not_stored(http, endpoint):
    """Refused at registration, in the shape of every invalid subscription: the Web SDK's `start()` rejects and
    the page's next `start()` subscribes again; nothing is stored for every publish to try."""
    r = http.request("POST", f"{BASE}/devices/web", {"token": btoa(subscription(endpoint)), "metadata": {}}, WEB_HEADERS)
    body = assert_error(r, 400, contains="not a valid web push subscription")
    assert "not an allowed push service" in body["description"], body
    assert r.headers["access-control-allow-origin"] == "*"


def test_vapid_key_of_an_instance_without_web_config_is_404(http):
    r = http.request("GET", f"/device_api/v1/instances/{NO_CREDENTIALS_INSTANCE_ID}/web-vapid-public-key", None,
                     {"Origin": WEB_ORIGIN})
    body = assert_error(r, 404)
    assert body["error"] == "Web push not configured", body
    assert r.headers["access-control-allow-origin"] == "*"


# MARK: CORS


def test_preflight_answers_204_with_methods_headers_and_max_age(http):
    for path in [f"{BASE}/devices/web", f"{BASE}/devices/web/web-x", f"{BASE}/devices/web/web-x/interests/a",
                 f"{BASE}/devices/web/web-x/user", f"{BASE}/web-vapid-public-key",
                 f"/reporting_api/v2/instances/{INSTANCE_ID}/events"]:
        r = http.request("OPTIONS", path, None, {"Origin": WEB_ORIGIN, "Access-Control-Request-Method": "PUT",
                                                 "Access-Control-Request-Headers": "content-type,authorization"})
        assert r.status == 204 and r.body == b"", (path, r)
        assert r.headers["access-control-allow-origin"] == "*", path
        assert r.headers["access-control-allow-methods"] == "GET, POST, PUT, DELETE"
        assert r.headers["access-control-allow-headers"] == "Content-Type, Authorization"
        assert int(r.headers["access-control-max-age"]) > 0


def test_errors_of_anonymous_routes_carry_cors_headers(http):
    cases = [
        ("GET", f"/device_api/v1/instances/{uuid.uuid4()}/web-vapid-public-key", None, 404),  # admission: no instance
        ("POST", f"/device_api/v1/instances/{uuid.uuid4()}/devices/web", {"token": "x"}, 404),
        ("GET", f"{BASE}/devices/web/web-missing", None, 404),  # handler
        ("POST", f"{BASE}/devices/web", b"{not json", 400),
        ("POST", f"{BASE}/devices/web", b"x" * (17 * 1024), 400),  # the route's body limit, before any handler
        ("POST", f"/reporting_api/v2/instances/{INSTANCE_ID}/events", {"event": "delivery"}, 400),
        ("POST", "/reporting_api/v1/elsewhere", {}, 400),
    ]
    for method, path, body, status in cases:
        r = HTTP(http_server_of(http)).request(method, path, body, WEB_HEADERS)
        assert_error(r, status)
        assert r.headers.get("access-control-allow-origin") == "*", (method, path, r.headers)


def http_server_of(client):
    """A fresh connection to the same server (body-limit errors close the connection)."""
    class Target:
        base = f"http://{client.host}:{client.port}"
        cert = None
    return Target


def test_secret_key_apis_never_carry_cors_headers(http):
    for method, path in [("GET", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes"),
                         ("DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/u"),
                         ("OPTIONS", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests")]:
        r = http.request(method, path, None, {"Origin": WEB_ORIGIN})
        assert "access-control-allow-origin" not in r.headers, (method, path, r.headers)


def test_allowed_origins_list_echoes_only_configured_origins(http):
    base = f"/device_api/v1/instances/{RESTRICTED_INSTANCE_ID}"
    r = http.request("GET", f"{base}/web-vapid-public-key", None, {"Origin": WEB_ORIGIN})
    assert r.status == 200 and r.headers["access-control-allow-origin"] == WEB_ORIGIN, r.headers
    assert "Origin" in r.headers.get("vary", "")
    for hostile in ["https://evil.example", "https://app.example.com.evil.example", "null", WEB_ORIGIN + "/",
                    "https://app.example.com:443"]:
        r = http.request("GET", f"{base}/web-vapid-public-key", None, {"Origin": hostile})
        assert_error(r, 403)
        assert "access-control-allow-origin" not in r.headers, (hostile, r.headers)
        r = http.request("OPTIONS", f"{base}/devices/web", None, {"Origin": hostile})
        assert r.status == 204 and "access-control-allow-origin" not in r.headers, (hostile, r.headers)
    # Errors of the restricted instance follow the same list.
    r = http.request("GET", f"{base}/devices/web/web-missing", None, {"Origin": WEB_ORIGIN.upper()})
    assert_error(r, 404)
    assert r.headers["access-control-allow-origin"] == WEB_ORIGIN


def test_restricted_origins_refuse_simple_cross_origin_writes_from_other_origins(http):
    """A browser sends a `text/plain` or body-less POST cross-origin without a preflight: hiding the answer is not
    enough, the write itself must be refused (403) for an origin that is not on `web.allowedOrigins`."""
    base = f"/device_api/v1/instances/{RESTRICTED_INSTANCE_ID}"
    evil = {"Origin": "https://evil.example"}
    body = {"token": btoa(subscription()), "metadata": {}}
    for headers in [{**evil, "Content-Type": "text/plain;charset=UTF-8"}, {**evil, "Content-Type": "application/json"}]:
        assert_error(http.request("POST", f"{base}/devices/web", body, headers), 403)
    # The same subscription from the allowed origin is a new device: nothing was stored above.
    r = http.request("POST", f"{base}/devices/web", body, WEB_HEADERS)
    assert r.status == 200 and r.json()["initialInterestSet"] == [], r
    device = f"{base}/devices/web/{r.json()['id']}"
    assert_error(http.request("POST", f"{device}/interests/stolen", b"", evil), 403)
    assert_error(http.request("PUT", f"{device}/interests", {"interests": ["x"]}, {**evil, "Content-Type": "text/plain"}), 403)
    assert_error(http.request("DELETE", device, b"", evil), 403)
    report = {"event": "open", "publishId": "pub", "deviceId": r.json()["id"], "timestampSecs": int(time.time())}
    assert_error(http.request("POST", f"/reporting_api/v2/instances/{RESTRICTED_INSTANCE_ID}/events", report,
                              {**evil, "Content-Type": "text/plain"}), 403)
    # Native SDKs send no Origin at all and are not affected; the interests are as the allowed calls left them.
    r = http.request("GET", f"{device}/interests", None, {})
    assert r.status == 200 and r.json()["interests"] == [], r
    assert_empty_ok(http.request("POST", f"{device}/interests/news", b"", {"Origin": WEB_ORIGIN}))
    assert http.request("GET", f"{device}/interests", None, {}).json()["interests"] == ["news"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
def test_device_and_reporting_bodies_must_be_labelled_application_json(http, content_type):
    """Every Beams SDK labels its bodies `application/json` (Android adds `; charset=UTF-8`); anything else, a
    missing Content-Type included, is Beams' 400 "Invalid content type" before the body is read."""
    headers = {"Content-Type": content_type} if content_type else {}
    body = {"token": fcm_token(), "metadata": {}}
    assert_error(http.request("POST", f"{BASE}/devices/fcm", body, headers), 400, "Only application/json is supported")
    device = http.request("POST", f"{BASE}/devices/fcm", body, ANDROID_HEADERS).json()["id"]
    base = f"{BASE}/devices/fcm/{device}"
    for method, path, payload in [("PUT", f"{base}/interests", {"interests": ["a"]}),
                                  ("PUT", f"{base}/metadata", {"sdkVersion": "1"}),
                                  ("PUT", f"{base}/token", {"token": fcm_token()}),
                                  ("PUT", f"{base}/time-zone", {"timeZone": "Europe/Paris"})]:
        assert_error(http.request(method, path, payload, headers), 400, "Only application/json is supported")
    assert http.request("GET", f"{base}/interests", None, {}).json()["interests"] == []
    report = {"event": "delivery", "publishId": "pub", "deviceId": device, "timestampSecs": int(time.time())}
    assert_error(http.request("POST", f"/reporting_api/v2/instances/{INSTANCE_ID}/events", report, headers), 400,
                 "Only application/json is supported")


def test_rate_limited_answers_carry_cors_headers(tmp_path_factory):
    directory = tmp_path_factory.mktemp("e2e-cors-429")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    srv = Server(directory, mock, p8, limits={"ipRequestsPerSecond": 1, "ipBurst": 2})
    try:
        client = HTTP(srv, keep_alive=True)
        statuses = []
        for _ in range(6):
            r = client.request("GET", f"{BASE}/devices/web/web-missing", None, {"Origin": WEB_ORIGIN})
            statuses.append(r.status)
            assert r.headers.get("access-control-allow-origin") == "*", r.headers
        assert 429 in statuses, statuses
        client.close()
    finally:
        srv.stop()
        mock.stop()
