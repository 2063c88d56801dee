"""The Reporting API faces the internet without a secret: forged events must not reach webhooks, counts or the
database (docs/API.md, Reporting API). Real server over TLS, strict mock APNs, a local webhook receiver."""
import hashlib
import hmac
import sqlite3
import time

import pytest

from beams import Beams, alert, random_token, unique, wait_for
from beams_client import HTTP, IOS_HEADERS, assert_empty_ok, assert_error

WEBHOOK_SECRET = "whsec-forgery"
USER_EVENTS = ("v1.UserNotificationAcknowledgement", "v1.UserNotificationOpen")
UNKNOWN_INSTANCE = "0b5c7e1a-93d4-4f2e-b8a6-1d2c3e4f5a6b"


@pytest.fixture(scope="module")
def setup(environment, hook):
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"webhook": {"url": hook.url("/instance"),
                                                                      "secret": WEBHOOK_SECRET}}, name="forgery")
    return server, mock, Beams(server), HTTP(server)


def report(http, instance, body):
    return http.request("POST", f"/reporting_api/v2/instances/{instance}/events", body, IOS_HEADERS)


def event(kind, client, publish_id, device_id, user_id=None, at=None):
    body = {"event": kind, "instanceId": client.instance_id, "publishId": publish_id, "deviceId": device_id,
            "timestampSecs": int(time.time()) if at is None else at}
    if user_id is not None:
        body["userId"] = user_id
    return body


def user_events(hook, publish_id):
    return [r for r in hook.received
            if r["headers"].get("Webhook-Event-Type") in USER_EVENTS and r["body"]["payload"]["publish_id"] == publish_id]


def stored_events(server, publish_id):
    """(device_id, user_id, at in ms) rows straight from the database file (read-only; the server keeps writing)."""
    db = sqlite3.connect(f"file:{server.directory / 'push.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute("SELECT device_id, user_id, at FROM events WHERE publish_id = ? ORDER BY kind",
                          (publish_id,)).fetchall()
    finally:
        db.close()


def users_publish(client, user):
    publish_id = client.publish("users", {"users": [user], "apns": alert()})
    client.wait_finished(publish_id)
    return publish_id


def test_the_webhook_names_the_devices_stored_user_not_the_one_in_the_body(setup, hook):
    server, _, client, http = setup
    alice = unique("alice")
    device_id = client.register(random_token(), user=alice)
    publish_id = users_publish(client, alice)
    for kind in ("Delivery", "Open"):
        assert_empty_ok(report(http, client.instance_id, event(kind, client, publish_id, device_id, "mallory")))
    events = wait_for(lambda: (e := user_events(hook, publish_id)) and len(e) == 2 and e, timeout=10)
    assert sorted(e["headers"]["Webhook-Event-Type"] for e in events) == sorted(USER_EVENTS)
    for e in events:
        assert e["body"]["payload"] == {"instance_id": client.instance_id, "publish_id": publish_id, "user_id": alice}
        assert e["headers"]["Webhook-Signature"] == hmac.new(WEBHOOK_SECRET.encode(), e["raw"], hashlib.sha1).hexdigest()
    assert {row[1] for row in stored_events(server, publish_id)} == {alice}
    assert client.status(publish_id)["reports"] == {"delivered": 1, "opened": 1}


def test_a_device_without_a_user_sends_no_user_webhook_whatever_the_body_says(setup, hook):
    server, _, client, http = setup
    victim = unique("victim")
    client.register(random_token(), user=victim)  # the publish really targets someone
    anonymous = client.register(random_token())
    publish_id = users_publish(client, victim)
    assert_empty_ok(report(http, client.instance_id, event("Open", client, publish_id, anonymous, victim)))
    time.sleep(1)
    assert user_events(hook, publish_id) == []
    # Not even recorded: a device without the publish's user was not one of its targets.
    assert stored_events(server, publish_id) == []


def test_a_users_publish_to_someone_else_sends_no_webhook_for_this_devices_user(setup, hook):
    _, _, client, http = setup
    bob, carol = unique("bob"), unique("carol")
    client.register(random_token(), user=bob)
    carol_device = client.register(random_token(), user=carol)
    publish_id = users_publish(client, bob)
    assert_empty_ok(report(http, client.instance_id, event("Open", client, publish_id, carol_device, bob)))
    time.sleep(1)
    assert user_events(hook, publish_id) == []


def test_an_interests_publish_sends_no_user_webhook(setup, hook):
    _, _, client, http = setup
    interest, user = unique("news"), unique("reader")
    device_id = client.register(random_token(), [interest], user=user)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    client.wait_finished(publish_id)
    assert_empty_ok(report(http, client.instance_id, event("Open", client, publish_id, device_id, user)))
    time.sleep(1)
    assert user_events(hook, publish_id) == []
    assert client.status(publish_id)["reports"] == {"delivered": 0, "opened": 1}


def test_reports_from_devices_the_publish_never_targeted_are_not_counted(setup):
    """20 devices that follow nothing the publish named, and users the publish did not name, report a delivery
    and an open: none counts (before, a publish to nobody showed 20 delivered, 20 opened). The one device that
    follows one of its interests counts."""
    server, _, client, http = setup
    interest, other = unique("target"), unique("elsewhere")
    # All registered before the publishes: the devices existed while they ran.
    strangers = [client.register(random_token(), [other], user=unique("stranger")) for _ in range(20)]
    follower = client.register(random_token(), [unique("unrelated"), interest])
    nobody = client.publish("interests", {"interests": [unique("nobody")], "apns": alert()})
    client.wait_finished(nobody)
    publish_id = client.publish("interests", {"interests": [unique("first"), interest], "apns": alert()})
    client.wait_finished(publish_id)
    for stranger in strangers:
        for target in (nobody, publish_id):
            for kind in ("Delivery", "Open"):
                assert_empty_ok(report(http, client.instance_id, event(kind, client, target, stranger)))
    assert_empty_ok(report(http, client.instance_id, event("Delivery", client, publish_id, follower)))
    assert client.status(nobody)["reports"] == {"delivered": 0, "opened": 0}
    assert client.status(publish_id)["reports"] == {"delivered": 1, "opened": 0}
    assert [row[0] for row in stored_events(server, publish_id)] == [follower]


def test_timestamps_are_clamped_between_the_publish_and_the_servers_clock(setup):
    server, _, client, http = setup
    interest = unique("clock")
    future, past = client.register(random_token(), [interest]), client.register(random_token(), [interest])
    before = time.time()
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    client.wait_finished(publish_id)
    for device_id, at in ((future, 4_102_444_800), (past, 0)):  # the year 2100, and 1970
        assert_empty_ok(report(http, client.instance_id, event("Delivery", client, publish_id, device_id, at=at)))
    after = time.time()
    rows = {row[0]: row[2] / 1000 for row in stored_events(server, publish_id)}
    assert set(rows) == {future, past}
    assert before - 1 <= rows[future] <= after + 1, "a future time is recorded as the server's now"
    assert before - 1 <= rows[past] <= rows[future], "a time before the publish is recorded as its creation"


@pytest.mark.parametrize("timestamp", [1e300, -1e300, 9.3e18, 18446744073709551615, 2**63])
def test_huge_or_negative_timestamps_are_clamped_not_a_crash(setup, timestamp):
    server, _, client, http = setup
    interest = unique("huge")
    device_id = client.register(random_token(), [interest])
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    client.wait_finished(publish_id)
    r = report(http, client.instance_id, f'{{"event":"Delivery","publishId":"{publish_id}","deviceId":"{device_id}",'
                                         f'"timestampSecs":{timestamp!r}}}')
    # 2**64-1 is beyond what the JSON parser keeps exact; it may be refused as malformed, never a 5xx.
    assert r.status in (200, 400), r
    if r.status == 200:
        at = stored_events(server, publish_id)[0][2] / 1000
        assert abs(at - time.time()) < 3600
    assert http.request("GET", "/health").status == 200


def test_unknown_devices_publishes_and_instances_never_count_and_never_404(setup, hook):
    server, _, client, http = setup
    user = unique("target")
    device_id = client.register(random_token(), user=user)
    publish_id = users_publish(client, user)
    cases = [
        (client.instance_id, event("Open", client, publish_id, "apns-00000000-0000-7000-8000-000000000000", user), 400),
        (client.instance_id, event("Open", client, "pubid-forged", device_id, user), 200),
        (UNKNOWN_INSTANCE, event("Open", client, publish_id, device_id, user), 400),
        ("not-a-uuid", event("Open", client, publish_id, device_id, user), 400),
    ]
    for instance, body, status in cases:
        r = report(http, instance, body)
        if status == 200:
            assert_empty_ok(r)
        else:
            assert_error(r, 400)
    assert_error(report(http, UNKNOWN_INSTANCE, event("Open", client, publish_id, device_id)), 400,
                 "Could not find the instance")
    assert_error(report(http, client.instance_id, event("Open", client, publish_id, "apns-nope")), 400,
                 "Could not find the device")
    time.sleep(1)
    assert user_events(hook, publish_id) == []
    assert client.status(publish_id)["reports"] == {"delivered": 0, "opened": 0}
    assert stored_events(server, "pubid-forged") == []


@pytest.mark.parametrize("path", [
    "/reporting_api/v2/instances//events",
    "/reporting_api/v2/instances/{i}/events/extra",
    "/reporting_api/v1/instances/{i}/events",
    "/reporting_api/v2/instances/{i}",
    "/reporting_api/x",
])
def test_other_reporting_paths_are_400_not_404(setup, path):
    _, _, client, http = setup
    r = http.request("POST", path.format(i=client.instance_id), {"event": "Open"}, IOS_HEADERS)
    assert_error(r, 400)


def test_a_reporting_body_over_4_kib_is_400_not_413(setup):
    _, _, client, http = setup
    r = report(http, client.instance_id, {"event": "Open", "pad": "x" * 5000})
    assert_error(r, 400, "Request body size is too large (max 4KiB)")
