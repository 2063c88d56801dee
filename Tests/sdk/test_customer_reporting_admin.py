"""Customer API (docs/BEAMS-PROTOCOL.md §3), Reporting API (§5) and the admin (device health) API end to end."""
import time

import pytest

from beams_client import (
    HTTP, IOS_HEADERS, IOSDevice, assert_empty_ok, assert_error, beams_claims, jwt_hs256, random_token, wait_for,
)
from conftest import INSTANCE_ID, SECRET

UNKNOWN_INSTANCE = "0b5c7e1a-93d4-4f2e-b8a6-1d2c3e4f5a6b"
AUTH = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture(scope="module")
def http(env):
    return HTTP(env[0])


def device_of(http, user=None, interests=(), token=None):
    device = IOSDevice(http, token)
    device.register()
    if interests:
        assert_empty_ok(device.set_interests(set(interests)))
    if user is not None:
        assert_empty_ok(device.set_user(jwt_hs256(beams_claims(user))))
    return device


def delete_user(http, raw_user, family="customer_api", headers=AUTH, instance=INSTANCE_ID):
    return http.request("DELETE", f"/{family}/v1/instances/{instance}/users/{raw_user}", headers=headers)


def exists(device):
    status = device.get().status
    assert status in (200, 404)
    return status == 200


def publish(http, interests, body=None):
    r = http.request("POST", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests",
                     {"interests": interests, "apns": body or {"aps": {"alert": "hello"}}},
                     {**AUTH, "Content-Type": "application/json"})
    assert r.status == 200, r
    return r.json()["publishId"]


def publish_status(http, publish_id):
    r = http.request("GET", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/{publish_id}", headers=AUTH)
    assert r.status == 200, r
    return r.json()


def finished(http, publish_id):
    return wait_for(lambda: (s := publish_status(http, publish_id))["status"] in ("finished", "failed") and s)


# MARK: Customer API


def test_delete_user_removes_only_their_devices(http):
    mine = [device_of(http, "delete-me", ["cust-news"]) for _ in range(2)]
    other = device_of(http, "keep-me", ["cust-news"])
    r = delete_user(http, "delete-me")
    assert_empty_ok(r)
    assert not any(exists(d) for d in mine)
    assert exists(other)
    assert other.server_interests() == ["cust-news"]
    r = http.request("GET", f"/admin_api/v1/instances/{INSTANCE_ID}/interests/cust-news", headers=AUTH)
    assert r.json()["subscribers"] == 1
    # Deleting again (nothing left) is still a success.
    assert_empty_ok(delete_user(http, "delete-me"))


def test_legacy_user_api_alias_deletes_too(http):
    device = device_of(http, "node-user")
    assert_empty_ok(delete_user(http, "node-user", family="user_api"))
    assert not exists(device)


@pytest.mark.parametrize("family", ["customer_api", "user_api"])
def test_delete_user_needs_the_secret(http, family):
    device = device_of(http, "guarded-user")
    assert_error(delete_user(http, "guarded-user", family, headers={}), 400, "Authorization header is missing")
    assert_error(delete_user(http, "guarded-user", family, headers={"Authorization": "Bearer wrong"}), 401,
                 "Incorrect Secret Key")
    assert_error(delete_user(http, "guarded-user", family, headers={"Authorization": SECRET}), 401,
                 "Incorrect Secret Key")
    assert exists(device)


def test_delete_user_on_an_unknown_instance_is_404(http):
    assert_error(delete_user(http, "u", instance=UNKNOWN_INSTANCE), 404, "Could not find the instance")


@pytest.mark.parametrize("user,raw_path", [
    ("a user/with?odd#chars", "a%20user/with%3Fodd%23chars"),   # Python SDK: quote(), `/` left raw
    ("a user/with?odd#chars", "a%20user%2Fwith%3Fodd%23chars"),  # Node SDK: encodeURIComponent
    ("x;y,z=w@v", "x;y,z=w@v"),
    ("ünïcode", "%C3%BCn%C3%AFcode"),
    ("/lead/", "/lead/"),                                          # Python: quote("/lead/") keeps both slashes
])
def test_user_id_in_the_path_is_percent_decoded_as_the_rest_of_the_path(http, user, raw_path):
    device = device_of(http, user)
    assert_empty_ok(delete_user(http, raw_path))
    assert not exists(device)


def test_plus_in_the_user_id_is_a_literal_plus(http):
    # Java, PHP and Ruby form-encode (space becomes `+`); the path is not a form, so `+` stays `+`.
    plus = device_of(http, "a+b")
    space = device_of(http, "a b")
    assert_empty_ok(delete_user(http, "a+b"))
    assert not exists(plus)
    assert exists(space)
    assert_empty_ok(delete_user(http, "a%2Bb"))  # nothing left under that id
    assert_empty_ok(delete_user(http, "a%20b"))
    assert not exists(space)


def test_user_id_longer_than_164_bytes_is_400(http):
    for raw in ("x" * 165, "%C3%A9" * 83):  # 165 bytes; 83 two-byte characters = 166 bytes
        assert_error(delete_user(http, raw), 400, "'User id' is too long, max length is 164")
    assert_empty_ok(delete_user(http, "x" * 164))


def test_empty_user_id_is_a_json_404(http):
    assert_error(delete_user(http, ""), 404)


def test_customer_api_is_rate_limited_per_instance(limited_env):
    limited = HTTP(limited_env[0])
    statuses, bodies = [], []
    for _ in range(30):
        r = delete_user(limited, "rate-user")
        statuses.append(r.status)
        if r.status == 429:
            bodies.append(r)
    assert set(statuses) <= {200, 429}, statuses
    assert statuses[:5] == [200] * 5  # the burst
    assert bodies, statuses
    body = assert_error(bodies[0], 429)
    assert body["error"] == "Rate Limited"
    # The device API has its own (per-address and per-instance) limits, far above this.
    device = IOSDevice(limited)
    device.register()
    assert all(device.get().status == 200 for _ in range(20))
    # The bucket refills at the configured rate.
    time.sleep(0.5)
    assert delete_user(limited, "rate-user").status == 200


# MARK: Reporting API


def report(http, body, instance=INSTANCE_ID):
    return http.request("POST", f"/reporting_api/v2/instances/{instance}/events", body, IOS_HEADERS)


def ios_event(kind, publish_id, device_id, user_id=None):
    body = {"event": kind, "instanceId": INSTANCE_ID, "publishId": publish_id, "deviceId": device_id,
            "timestampSecs": int(time.time())}
    if user_id:
        body["userId"] = user_id
    if kind.lower() == "delivery":
        body.update({"appInBackground": True, "hasDisplayableContent": True, "hasData": False})
    return body


@pytest.mark.parametrize("kind", ["Delivery", "delivery", "DELIVERY", "Open", "open", "oPeN"])
def test_report_accepts_the_event_in_any_case(http, kind):
    device = device_of(http)
    # An unknown publish is accepted and not counted (test_reporting_forgery.py); the event name is parsed first.
    assert_empty_ok(report(http, ios_event(kind, "pubid-case", device.device_id)))


@pytest.mark.parametrize("missing", ["event", "publishId", "deviceId", "timestampSecs"])
def test_report_without_a_required_field_is_400(http, missing):
    body = ios_event("Delivery", "pubid-x", "dev-x")
    del body[missing]
    assert_error(report(http, body), 400)


@pytest.mark.parametrize("body", [{"event": "Click", "publishId": "p", "deviceId": "d", "timestampSecs": 1}, b"{no"])
def test_report_with_an_unknown_event_or_bad_json_is_400(http, body):
    assert_error(report(http, body), 400)


def test_report_with_a_malformed_instance_id_is_400_with_the_format(http):
    r = report(http, ios_event("Delivery", "p", "d"), instance="not-a-uuid")
    assert_error(r, 400, contains="expected to be in this format: 426abfc7-41fe-492f-bcf1-27586fa9bd3f")


def test_report_for_an_unknown_instance_is_400_never_404(http):
    # Any 404 makes the iOS SDK re-register and replay the report; Beams documents 400 here.
    assert_error(report(http, ios_event("Delivery", "p", "d"), instance=UNKNOWN_INSTANCE), 400,
                 "Could not find the instance")


def test_reports_are_counted_once_per_publish(env, http):
    _, mock = env
    device = device_of(http, "reporting-user", ["report-news"])
    publish_id = publish(http, ["report-news"])
    seen = wait_for(lambda: [r for r in mock.requests() if r["token"] == device.token])
    pusher = seen[0]["payload"]["data"]["pusher"]
    assert pusher == {"instanceId": INSTANCE_ID, "publishId": publish_id}

    for kind in ("Delivery", "Delivery", "Open", "open"):  # the SDK retries; a repeat counts once
        assert_empty_ok(report(http, ios_event(kind, pusher["publishId"], device.device_id, "reporting-user")))
    reports = publish_status(http, publish_id)["reports"]
    assert reports == {"delivered": 1, "opened": 1}


# MARK: Admin (device health) API


def admin(http, path, headers=AUTH):
    return http.request("GET", f"/admin_api/v1/instances/{INSTANCE_ID}{path}", headers=headers)


@pytest.mark.parametrize("path", ["/devices/x", "/devices?token=00", "/users/u", "/interests/i"])
def test_admin_api_needs_the_secret(http, path):
    assert_error(admin(http, path, headers={}), 400)
    assert_error(admin(http, path, headers={"Authorization": "Bearer wrong"}), 401, "Incorrect Secret Key")


def test_admin_device_card_by_id_and_by_token(http):
    device = device_of(http, "card-user", ["card-a", "card-b"])
    card = admin(http, f"/devices/{device.device_id}").json()
    assert card["id"] == device.device_id
    assert card["token"] == device.token
    assert card["platform"] == "apns"
    assert card["userId"] == "card-user"
    assert card["interests"] == ["card-a", "card-b"]
    assert card["valid"] is True and card["invalidatedAt"] is None
    assert card["lastDelivery"] is None
    assert card["bundleIdentifier"] == "com.example.sdktest"
    assert card["metadata"] == device.metadata
    by_token = admin(http, f"/devices?token={device.token.upper()}").json()
    assert by_token == card
    assert_error(admin(http, f"/devices?token={random_token()}"), 404)
    assert_error(admin(http, "/devices"), 400)
    assert_error(admin(http, f"/devices?token={device.token}&platform=gcm"), 400)
    assert_error(admin(http, f"/devices?token={device.token}&platform=fcm"), 404)
    assert_error(admin(http, "/devices/no-such-device"), 404)


def test_admin_lists_a_users_devices(http):
    devices = [device_of(http, "list user/x") for _ in range(2)]
    body = admin(http, "/users/list%20user/x").json()
    assert body["userId"] == "list user/x"
    assert [d["id"] for d in body["devices"]] == [d.device_id for d in devices]
    assert admin(http, "/users/nobody").json() == {"userId": "nobody", "devices": []}


def test_admin_shows_an_unregistered_device_after_apns_410(env, http):
    _, mock = env
    healthy = device_of(http, interests=["health-check"])
    gone = device_of(http, interests=["health-check"])
    assert admin(http, "/interests/health-check").json() == {"interest": "health-check", "subscribers": 2}
    unregistered_at_ms = int(time.time() * 1000) + 1000  # after the registration
    mock.behave(gone.token, status=410, reason="Unregistered", timestamp=unregistered_at_ms)

    publish_id = publish(http, ["health-check"])
    status = finished(http, publish_id)
    assert status["apns"]["accepted"] == 1
    assert status["apns"]["failedByReason"] == {"Unregistered": 1}

    card = admin(http, f"/devices/{gone.device_id}").json()
    assert card["valid"] is False
    assert card["invalidatedAt"] is not None
    assert card["lastDelivery"]["status"] == 410
    assert card["lastDelivery"]["reason"] == "Unregistered"
    assert card["lastDelivery"]["at"]
    ok = admin(http, f"/devices/{healthy.device_id}").json()
    assert ok["valid"] is True
    assert ok["lastDelivery"]["status"] == 200
    assert admin(http, "/interests/health-check").json()["subscribers"] == 1

    # The next publish skips the unregistered device.
    before = len([r for r in mock.requests() if r["token"] == gone.token])
    second = finished(http, publish(http, ["health-check"]))
    assert second["targets"] == 1 and second["apns"]["accepted"] == 1
    assert len([r for r in mock.requests() if r["token"] == gone.token]) == before

    # The app launches again and registers the same token: the device is valid again with its interests.
    mock.behave(gone.token, status=200)
    assert gone.register()["id"] == gone.device_id
    card = admin(http, f"/devices/{gone.device_id}").json()
    assert card["valid"] is True
    assert admin(http, "/interests/health-check").json()["subscribers"] == 2


def test_a_410_older_than_the_last_registration_keeps_the_device(env, http):
    # Apple: the token is dead only if the app did not register it again after APNs' timestamp.
    _, mock = env
    device = device_of(http, interests=["stale-410"])
    mock.behave(device.token, status=410, reason="Unregistered", timestamp=int(time.time() * 1000) - 60_000)
    status = finished(http, publish(http, ["stale-410"]))
    assert status["apns"]["failedByReason"] == {"Unregistered": 1}
    card = admin(http, f"/devices/{device.device_id}").json()
    assert card["lastDelivery"]["status"] == 410
    assert card["valid"] is True
    assert admin(http, "/interests/stale-410").json()["subscribers"] == 1


def test_admin_interest_with_an_invalid_name_is_400(http):
    assert_error(admin(http, "/interests/bad%20name"), 400)
