"""Live Activities end to end (docs/API.md "Live Activities"): apps store push-to-start and activity update tokens
through the device API; publishes with `x_live_activity` start activities by interest and update or end them by
user, through the durable engine, against the strict mock APNs (which checks the liveactivity payload rules)."""
import signal
import time

import pytest
import requests

from beams import Beams, random_token, unique, wait_for
from bulk import register_devices
from harness import CONTROL_TIMEOUT, INSTANCE_ID, LOAD_TEST_LIMITS, SECRET, TOPIC

LA_TOPIC = TOPIC + ".push-type.liveactivity"
BOUNDS = {"maxLiveActivityStartTokensPerDevice": 3, "maxLiveActivitiesPerDevice": 3}


@pytest.fixture(scope="module")
def la_env(environment):
    mock = environment.mock()
    server = environment.server(mock, {"limits": {**LOAD_TEST_LIMITS, **BOUNDS}})
    return server, mock, Beams(server)


def device_url(server, device_id, suffix="", platform="apns"):
    return server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/{platform}/{device_id}/live-activity{suffix}")


def put_start(client, device_id, attributes_type, token):
    r = client.session.put(device_url(client.server, device_id, f"/start-tokens/{attributes_type}"),
                           json={"token": token}, timeout=10)
    assert r.status_code == 200, r.text


def put_activity(client, device_id, activity_id, token, attributes_type="Match", **extra):
    r = client.session.put(device_url(client.server, device_id, f"/activities/{activity_id}"),
                           json={"token": token, "attributesType": attributes_type, **extra}, timeout=10)
    assert r.status_code == 200, r.text


def listing(client, device_id):
    r = client.session.get(device_url(client.server, device_id), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def start_body(audience, attributes_type="Match", **member):
    return {**audience, "x_live_activity": {"attributesType": attributes_type, **member},
            "apns": {"aps": {"event": "start", "attributes-type": attributes_type, "attributes": {"matchId": "m1"},
                             "content-state": {"home": 0, "away": 0}, "alert": {"title": "Kick-off"},
                             "input-push-token": 1}}}


def update_body(audience, event="update", attributes_type="Match", **member):
    aps = {"event": event, "content-state": {"home": 1, "away": 0}}
    if event == "end":
        aps["dismissal-date"] = 0
    return {**audience, "x_live_activity": {"attributesType": attributes_type, **member}, "apns": {"aps": aps}}


def received(mock, token):
    return [r for r in mock.requests_for(token) if r["status"] == 200]


def test_start_by_interest_goes_to_push_to_start_tokens_only(la_env):
    server, mock, client = la_env
    interest = unique("scores")
    fan, other_fan, stranger = random_token(), random_token(), random_token()
    fan_id = client.register(fan, [interest])
    other_id = client.register(other_fan, [interest, unique("x")])
    stranger_id = client.register(stranger, [unique("elsewhere")])
    starts = {fan_id: random_token(), other_id: random_token(), stranger_id: random_token()}
    for device_id, token in starts.items():
        put_start(client, device_id, "Match", token)
    ride = random_token()
    put_start(client, fan_id, "Ride", ride)

    before = int(time.time())
    status = client.wait_finished(client.publish("interests", start_body({"interests": [interest]})))
    assert status["targets"] == 2 and status["apns"]["accepted"] == 2, status
    for token in (starts[fan_id], starts[other_id]):
        [request] = received(mock, token)
        headers, aps = request["headers"], request["payload"]["aps"]
        assert headers["apns-topic"] == LA_TOPIC and headers["apns-push-type"] == "liveactivity"
        assert headers["apns-priority"] == "5"
        assert before <= aps["timestamp"] <= int(time.time()) + 1
        assert aps["event"] == "start" and aps["attributes-type"] == "Match" and aps["input-push-token"] == 1
        assert "data" not in request["payload"] and "content-available" not in aps  # never Beams' tracking
    assert received(mock, starts[stranger_id]) == [] and received(mock, ride) == []
    assert received(mock, fan) == [] and received(mock, other_fan) == []  # device tokens are not Live Activities


def test_update_and_end_by_user_reach_running_activities_and_one_activity_id(la_env):
    server, mock, client = la_env
    user = unique("rider")
    phone, tablet = client.register(random_token(), user=user), client.register(random_token(), user=user)
    a1, a2, a3, ride = random_token(), random_token(), random_token(), random_token()
    put_activity(client, phone, "A1", a1, reference="match-7")
    put_activity(client, tablet, "A2", a2)
    put_activity(client, tablet, "R1", ride, attributes_type="Ride")
    put_activity(client, phone, "A3", random_token())
    put_activity(client, phone, "A3", a3)  # the token rotated: the new one replaces the old

    status = client.wait_finished(client.publish("users", update_body({"users": [user]}, priority=10)))
    assert status["targets"] == 3 and status["apns"]["accepted"] == 3, status
    for token in (a1, a2, a3):
        [request] = received(mock, token)
        assert request["headers"]["apns-priority"] == "10" and request["payload"]["aps"]["event"] == "update"
    assert received(mock, ride) == []

    status = client.wait_finished(client.publish("users", update_body({"users": [user]}, "end", activityId="A1")))
    assert status["targets"] == 1, status
    assert [r["payload"]["aps"]["event"] for r in received(mock, a1)] == ["update", "end"]
    assert len(received(mock, a2)) == 1 and len(received(mock, a3)) == 1

    # The app reports the activity ended: it is no target any more.
    r = client.session.delete(device_url(server, phone, "/activities/A1"), timeout=10)
    assert r.status_code == 200, r.text
    rows = listing(client, phone)["activities"]
    assert [row["activityId"] for row in rows] == ["A3"]
    assert a3 not in str(rows) and rows[0]["token"].startswith(a3[:4])  # masked


def test_410_on_an_activity_token_deletes_that_token_not_the_device(la_env):
    server, mock, client = la_env
    user = unique("fan")
    device_token = random_token()
    device_id = client.register(device_token, user=user)
    dead, alive = random_token(), random_token()
    put_activity(client, device_id, "D1", dead)
    put_activity(client, device_id, "D2", alive)
    mock.behave(dead, status=410, reason="Unregistered")

    status = client.wait_finished(client.publish("users", update_body({"users": [user]})))
    assert status["apns"]["accepted"] == 1 and status["apns"]["failedByReason"] == {"Unregistered": 1}, status
    assert status["liveActivityTokensRemoved"] == 1 and status["devicesRemoved"] == 0, status
    assert [row["activityId"] for row in listing(client, device_id)["activities"]] == ["D2"]
    # The device itself still gets ordinary notifications.
    status = client.wait_finished(client.publish("users", {"users": [user], "apns": {"aps": {"alert": "hi"}}}))
    assert status["apns"]["accepted"] == 1, status
    assert len(received(mock, device_token)) == 1


def test_device_token_not_for_topic_keeps_the_token(la_env):
    server, mock, client = la_env
    user = unique("topic")
    device_id = client.register(random_token(), user=user)
    token = random_token()
    put_activity(client, device_id, "T1", token)
    mock.behave(token, status=400, reason="DeviceTokenNotForTopic")
    status = client.wait_finished(client.publish("users", update_body({"users": [user]})))
    assert status["apns"]["failedByReason"] == {"DeviceTokenNotForTopic": 1}, status
    assert [row["activityId"] for row in listing(client, device_id)["activities"]] == ["T1"]


def test_expired_activity_tokens_are_not_sent_to(la_env):
    server, mock, client = la_env
    user = unique("late")
    device_id = client.register(random_token(), user=user)
    short, long = random_token(), random_token()
    put_activity(client, device_id, "S", short, expiresAt=int(time.time()) + 2)
    put_activity(client, device_id, "L", long, expiresAt=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                          time.gmtime(time.time() + 3600)))
    time.sleep(3)
    status = client.wait_finished(client.publish("users", update_body({"users": [user]})))
    assert status["targets"] == 1, status
    assert received(mock, short) == [] and len(received(mock, long)) == 1


def test_publish_extension_refuses_bad_live_activity_bodies(la_env):
    server, mock, client = la_env
    cases = [
        ({**update_body({"interests": ["a"]}), "apns": {"aps": {"event": "update", "content-state": {},
                                                                "timestamp": 1}}}, "`apns.aps.timestamp`"),
        ({**start_body({"interests": ["a"]}), "x_live_activity": {"attributesType": "Other"}},
         "`apns.aps.attributes-type`"),
        ({**update_body({"interests": ["a"]}), "fcm": {"notification": {"title": "x"}}}, "`fcm`"),
        (update_body({"interests": ["a"]}, priority=1), "`x_live_activity.priority`"),
        (update_body({"interests": ["a"]}, attributesType="bad type"), "`x_live_activity.attributesType`"),
        ({**update_body({"interests": ["a"]}), "apns": {"aps": {"event": "update", "content-state": {
            "pad": "x" * 5000}}}}, "`apns`"),
    ]
    for body, path in cases:
        r = client.publish_raw("/interests", body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"] == "Unprocessable Entity" and r.json()["description"].startswith(path), r.text


def test_device_api_extension_refuses_hostile_input(la_env):
    server, mock, client = la_env
    device_id = client.register(random_token())
    session = client.session

    def check(method, url, status, **kw):
        r = session.request(method, url, timeout=10, **kw)
        assert r.status_code == status, (method, url, r.status_code, r.text)
        body = r.json()
        assert set(body) >= {"error", "description"}, body
        return body

    start = device_url(server, device_id, "/start-tokens/Match")
    check("PUT", start, 413, data='{"token":"' + "a" * 5000 + '"}', headers={"Content-Type": "application/json"})
    check("PUT", start, 400, json={"token": "not-hex!"})
    check("PUT", start, 400, json={"token": "abc"})  # odd and short
    check("PUT", start, 400, data="{nope", headers={"Content-Type": "application/json"})
    check("PUT", start, 422, json={"token": random_token(), "extra": 1})
    check("PUT", start, 422, json={})
    check("PUT", device_url(server, "apns-00000000-0000-7000-8000-000000000000", "/start-tokens/Match"), 404,
          json={"token": random_token()})
    check("PUT", device_url(server, device_id, "/start-tokens/9bad"), 400, json={"token": random_token()})
    check("PUT", device_url(server, device_id, "/start-tokens/" + "A" * 129), 400, json={"token": random_token()})
    check("GET", device_url(server, device_id, platform="fcm"), 404)

    activity = device_url(server, device_id, "/activities/A1")
    check("PUT", activity, 422, json={"token": random_token()})  # attributesType missing
    check("PUT", activity, 422, json={"token": random_token(), "attributesType": "Match", "expiresAt": "yesterday"})
    check("PUT", activity, 422, json={"token": random_token(), "attributesType": "Match", "expiresAt": 1})
    check("PUT", activity, 422, json={"token": random_token(), "attributesType": "Match", "reference": "a\nb"})
    check("PUT", activity, 422, json={"token": random_token(), "attributesType": "Match", "expiresAt": 1e300})
    check("PUT", device_url(server, device_id, "/activities/" + "x" * 129), 400,
          json={"token": random_token(), "attributesType": "Match"})
    check("PUT", device_url(server, device_id, "/activities/a%00b"), 400,
          json={"token": random_token(), "attributesType": "Match"})

    unknown = "apns-00000000-0000-7000-8000-000000000000"
    check("DELETE", device_url(server, unknown, "/start-tokens/Match"), 404)
    check("DELETE", device_url(server, unknown, "/activities/A1"), 404)
    check("DELETE", device_url(server, device_id, "/start-tokens/no-dash"), 400)
    check("DELETE", device_url(server, device_id, "/activities/" + "x" * 129), 400)
    r = session.delete(device_url(server, device_id, "/activities/never-stored"), timeout=10)
    assert r.status_code == 200, r.text  # an unknown row of a known device: already gone
    r = session.delete(device_url(server, device_id, "/activities/A1"), data="x" * 10, timeout=10)
    assert 400 <= r.status_code < 500 and set(r.json()) >= {"error", "description"}, r.text  # these routes take no body

    # Bounds: 3 attributes types and 3 running activities per device (this server's config).
    for index in range(3):
        put_start(client, device_id, f"Type{index}", random_token())
        put_activity(client, device_id, f"B{index}", random_token())
    body = check("PUT", device_url(server, device_id, "/start-tokens/Type3"), 422, json={"token": random_token()})
    assert "maxLiveActivityStartTokensPerDevice" in body["description"]
    body = check("PUT", device_url(server, device_id, "/activities/B3"), 422,
                 json={"token": random_token(), "attributesType": "Match"})
    assert "maxLiveActivitiesPerDevice" in body["description"]
    put_start(client, device_id, "Type0", random_token())  # replacing a row is always allowed
    put_activity(client, device_id, "B0", random_token())
    listed = listing(client, device_id)
    assert len(listed["startTokens"]) == 3 and len(listed["activities"]) == 3
    # Deleting the device deletes its rows.
    assert session.delete(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}"),
                          timeout=10).status_code == 200
    check("GET", device_url(server, device_id), 404)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_restart_mid_fanout_resumes_without_losing_or_repeating_tokens(environment, stop_signal):
    """A stop in the middle of a start fan-out over 300 push-to-start tokens: the restarted server finishes it and
    every token got the start. After SIGTERM (a drained stop checkpoints every answer) exactly once; after kill -9
    at most what was in flight (20 streams) plus what was answered since the last checkpoint is sent again."""
    mock = environment.mock()
    server = environment.server(mock, {"engine": {"leaseSeconds": 5},
                                       "apns": {"connectionsPerPool": 1, "streamsPerConnection": 20},
                                       "limits": LOAD_TEST_LIMITS}, name=f"la-restart-{stop_signal.name}")
    client = Beams(server)
    interest = unique("restart")
    ids, _ = register_devices(server, INSTANCE_ID, [random_token() for _ in range(300)], interest)
    tokens = [random_token() for _ in ids]
    for device_id, token in zip(ids, tokens):
        put_start(client, device_id, "Match", token)
    mock.configure(record=False, delay_ms=50)
    published = time.monotonic()
    publish_id = client.publish("interests", start_body({"interests": [interest]}))
    control = requests.Session()

    def seen():
        return control.get(f"{mock.control}/stats", params={"tokens": "0"}, timeout=5).json()["requests"]

    wait_for(lambda: seen() >= 60, timeout=60, interval=0.01)
    stopped = time.monotonic()
    server.proc.send_signal(stop_signal)
    exit_code = server.proc.wait(timeout=40)
    assert exit_code == (0 if stop_signal == signal.SIGTERM else -signal.SIGKILL)
    at_stop = seen()
    assert at_stop < 300, "the stop came after the fan-out ended"
    mock.configure(delay_ms=0)
    server.start()
    status = client.wait_finished(publish_id, timeout=120)
    assert status["attempts"] == 2 and status["targets"] == 300 and status["apns"]["accepted"] == 300, status
    per_token = control.get(f"{mock.control}/stats", timeout=CONTROL_TIMEOUT).json()["per_token"]
    counts = [per_token.get(token, {}).get("200", 0) for token in tokens]
    assert 0 not in counts, "a token was never sent to"
    assert set(per_token) == set(tokens)  # nothing went to the device tokens
    duplicates = sum(count - 1 for count in counts)
    if stop_signal == signal.SIGTERM:
        assert duplicates == 0, {n: counts.count(n) for n in set(counts)}
    else:
        # 20 in flight, plus a checkpoint interval (0.2 s, doubled) of answers at the fan-out's rate.
        rate = at_stop / max(stopped - published, 1e-3)
        assert duplicates <= 20 + rate * 0.4, (duplicates, at_stop, rate)
