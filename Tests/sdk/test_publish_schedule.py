"""Scheduled, local-time, throttled, cancelled and expired publishes end to end (`x_delivery`, docs/API.md): the
real server binary against the strict mock APNs, times measured where the notifications arrive (the mock)."""
import datetime
import json
import time
from zoneinfo import ZoneInfo

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from harness import INSTANCE_ID, LOAD_TEST_LIMITS

UTC = datetime.timezone.utc


def rfc3339(moment):
    """A UNIX time as RFC 3339 with milliseconds and an explicit offset."""
    return datetime.datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def arrivals(mock, group="data.pusher.publishId"):
    return requests.get(f"{mock.control}/arrivals", params={"group": group}, timeout=30).json()


def put_time_zone(client, device_id, body, raw=None):
    url = client.server.url(f"/device_api/v1/instances/{client.instance_id}/devices/apns/{device_id}/time-zone")
    if raw is not None:
        return client.session.put(url, data=raw, headers={"Content-Type": "application/json"}, timeout=10)
    return client.session.put(url, json=body, timeout=10)


def wait_state(client, publish_id, states, timeout=30):
    return wait_for(lambda: (s := client.status(publish_id))["status"] in states and s, timeout=timeout,
                    message=f"{publish_id} never reached {states}")


def first_arrivals(mock, tokens):
    """Each token's first arrival time at the mock (None when it got nothing)."""
    times = {}
    for token in tokens:
        got = mock.requests_for(token)
        times[token] = min(r["time"] for r in got) if got else None
    return times


def sent_counts(mock, tokens):
    per_token = mock.stats()["sent_per_token"]
    return {token: sum(per_token.get(token, {}).values()) for token in tokens}


# MARK: - Scheduled


def test_publish_scheduled_two_seconds_ahead_starts_on_time_and_not_before(env):
    server, mock = env
    client = Beams(server)
    interest = unique("sched")
    tokens = client.register_devices(5, [interest])
    send_at = time.time() + 2.0
    r = client.publish_raw("/interests", {"interests": [interest], "apns": alert("scheduled"),
                                          "x_delivery": {"sendAt": rfc3339(send_at)}})
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    assert abs(parse_time(r.json()["scheduledFor"]) - send_at) < 0.002, r.json()
    status = client.status(publish_id)
    assert status["status"] == "scheduled", status
    assert abs(parse_time(status["scheduledFor"]) - send_at) < 0.002, status
    # Not before: nothing has arrived half a second before its time.
    time.sleep(max(0.0, send_at - 0.5 - time.time()))
    assert all(t is None for t in first_arrivals(mock, tokens).values())
    assert client.status(publish_id)["status"] == "scheduled"
    finished = client.wait_finished(publish_id)
    assert finished["apns"]["accepted"] == 5, finished
    times = first_arrivals(mock, tokens)
    assert all(t is not None for t in times.values()), times
    # On time: the engine's timer fires at the due moment; every device has it within a second of it.
    assert min(times.values()) >= send_at - 0.01, (min(times.values()), send_at)
    assert max(times.values()) <= send_at + 1.0, (max(times.values()), send_at)
    assert parse_time(finished["startedAt"]) >= send_at - 0.01


def test_scheduled_publish_survives_kill_9_and_goes_out_once_late_within_its_window(environment):
    mock = environment.mock()
    server = environment.server(mock, name="restart")
    client = Beams(server)
    interest = unique("restart")
    tokens = client.register_devices(20, [interest])
    send_at = time.time() + 3.0
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("restart"),
                                              "x_delivery": {"sendAt": rfc3339(send_at),
                                                             "expiresAt": rfc3339(send_at + 120)}})
    assert client.status(publish_id)["status"] == "scheduled"
    server.kill9()
    # The server is down at its time; it comes back a second later, inside the window.
    time.sleep(max(0.0, send_at + 1.0 - time.time()))
    assert sent_counts(mock, tokens) == {token: 0 for token in tokens}
    server.start()
    client = Beams(server)
    finished = client.wait_finished(publish_id)
    assert finished["apns"]["accepted"] == 20 and finished["targets"] == 20, finished
    assert sent_counts(mock, tokens) == {token: 1 for token in tokens}
    # A second restart does not send it again.
    server.stop()
    server.start()
    time.sleep(1.0)
    assert sent_counts(mock, tokens) == {token: 1 for token in tokens}
    assert Beams(server).status(publish_id)["status"] == "finished"


def test_publish_whose_window_closed_while_the_server_was_down_expires_and_is_never_sent(environment):
    mock = environment.mock()
    server = environment.server(mock, name="expiry")
    client = Beams(server)
    interest = unique("expiry")
    tokens = client.register_devices(10, [interest])
    send_at = time.time() + 1.5
    expired_id = client.publish("interests", {"interests": [interest], "apns": alert("expired"),
                                              "x_delivery": {"sendAt": rfc3339(send_at),
                                                             "expiresAt": rfc3339(send_at + 1.0)}})
    # Its APNs expiration counts as the window when `expiresAt` is absent.
    apns_expired_id = client.publish("interests", {
        "interests": [interest], "apns": alert("apns-expired", expiration=int(send_at) + 1),
        "x_delivery": {"sendAt": rfc3339(send_at)}})
    server.kill9()
    time.sleep(max(0.0, send_at + 2.5 - time.time()))
    server.start()
    client = Beams(server)
    for publish_id in (expired_id, apns_expired_id):
        status = wait_state(client, publish_id, ("expired", "finished", "failed"))
        assert status["status"] == "expired", status
        assert status["targets"] == 0 and status["apns"]["accepted"] == 0, status
        assert "delivery window closed" in status["summary"], status
    time.sleep(0.5)
    assert sent_counts(mock, tokens) == {token: 0 for token in tokens}
    assert mock.stats()["requests"] == 0


# MARK: - Local time


def next_occurrence(start, local, zone):
    """The first moment at or after `start` (UNIX seconds) when `zone`'s clock shows `local` (a time)."""
    day = datetime.datetime.fromtimestamp(start, zone).date()
    for offset in range(3):
        candidate = datetime.datetime.combine(day + datetime.timedelta(days=offset), local, tzinfo=zone).timestamp()
        if candidate >= start:
            return candidate
    raise AssertionError("no occurrence")


def test_local_time_publish_sends_each_zone_at_its_own_local_time(environment):
    default_zone = "Asia/Kathmandu"
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"delivery": {"defaultTimeZone": default_zone}},
                                name="localtime")
    client = Beams(server)
    interest = unique("local")
    zones = {"Asia/Kathmandu": 3, None: 3, "Asia/Kolkata": 2, "Europe/London": 2, "America/New_York": 2}
    devices = []  # (token, zone name or None)
    for zone, count in zones.items():
        for _ in range(count):
            token = random_token()
            device_id = client.register(token, [interest])
            if zone is not None:
                r = put_time_zone(client, device_id, {"timeZone": zone})
                assert r.status_code == 200, r.text
            devices.append((token, zone))
    # The local time is Kathmandu's clock three seconds from now: the default-zone devices share that round, the
    # others are due at the same wall-clock time in their own zones, hours away.
    target = time.time() + 3.0
    local = datetime.datetime.fromtimestamp(target, ZoneInfo(default_zone)).time().replace(microsecond=0)
    start = time.time()
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("local"),
                                              "x_delivery": {"deliverAtLocalTime": local.isoformat()}})
    start = int(start)
    due = {zone: next_occurrence(start, local, ZoneInfo(zone or default_zone)) for zone in zones}
    first_round = due["Asia/Kathmandu"]
    assert due[None] == first_round
    assert all(due[zone] > first_round + 60 for zone in zones if zone not in ("Asia/Kathmandu", None)), due

    round_tokens = [token for token, zone in devices if zone in ("Asia/Kathmandu", None)]
    later_tokens = [token for token, zone in devices if zone not in ("Asia/Kathmandu", None)]
    wait_for(lambda: all(t is not None for t in first_arrivals(mock, round_tokens).values()), timeout=15)
    times = first_arrivals(mock, round_tokens)
    assert min(times.values()) >= first_round - 0.01, (times, first_round)
    assert max(times.values()) <= first_round + 1.0, (times, first_round)
    # After its first round the publish waits, scheduled for the earliest zone still to come.
    status = wait_state(client, publish_id, ("scheduled",))
    assert abs(parse_time(status["scheduledFor"]) - min(due[z] for z in zones if due[z] > first_round)) < 0.002, \
        (status, due)
    assert status["apns"]["accepted"] == len(round_tokens), status
    time.sleep(1.0)
    assert sent_counts(mock, later_tokens) == {token: 0 for token in later_tokens}
    assert sent_counts(mock, round_tokens) == {token: 1 for token in round_tokens}
    # Cancelling it between rounds ends it with the first round's counts; nothing more goes out.
    r = client.cancel_raw(publish_id)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "cancelled" and r.json()["apns"]["accepted"] == len(round_tokens), r.json()


def test_device_time_zone_is_validated_and_shown(env):
    server, _ = env
    client = Beams(server)
    device_id = client.register(random_token())
    device_url = server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}")
    assert put_time_zone(client, device_id, {"timeZone": "Europe/Paris"}).status_code == 200
    assert client.session.get(device_url, timeout=10).json()["timeZone"] == "Europe/Paris"
    for body, fragment in [({"timeZone": "Mars/Olympus"}, "unknown time zone"),
                           ({"timeZone": "CET\n"}, "IANA time zone name"),
                           ({"timeZone": "A" * 65}, "1 to 64"),
                           ({"timeZone": ""}, "1 to 64"),
                           ({"timeZone": 1}, "string or null"),
                           ({"timeZone": ["Europe/Paris"]}, "string or null"),
                           ({}, "required"),
                           ({"timeZone": "UTC", "extra": 1}, "Unknown member")]:
        r = put_time_zone(client, device_id, body)
        assert r.status_code == 400, (body, r.text)
        assert set(r.json()) == {"error", "description"} and fragment in r.json()["description"], (body, r.text)
    assert put_time_zone(client, device_id, None, raw="{").status_code == 400
    assert put_time_zone(client, device_id, None, raw="x" * 2048).status_code in (400, 413)
    assert client.session.get(device_url, timeout=10).json()["timeZone"] == "Europe/Paris", "refusals change nothing"
    assert put_time_zone(client, "apns-00000000-0000-7000-8000-000000000000", {"timeZone": "UTC"}).status_code == 404
    assert put_time_zone(client, device_id, {"timeZone": None}).status_code == 200
    assert "timeZone" not in client.session.get(device_url, timeout=10).json()


# MARK: - Throttling


def per_second(times, start, end):
    counts = [0] * int(end - start)
    for t in times:
        index = int(t - start)
        if 0 <= index < len(counts):
            counts[index] += 1
    return counts


def rate(times):
    return len(times) / max(1e-3, times[-1] - times[0])


@pytest.mark.timing
def test_throttled_publish_is_paced_evenly_while_an_unthrottled_one_goes_at_full_speed(environment):
    """1,800 devices at 9,000 per minute take about 12 s at an even 150 per second measured at the mock; an
    unthrottled publish started in the middle is not paced by it. Both share the mock's capacity (one Python
    process, about 1,000 to 2,000 requests per second on a busy machine): the throttle is a ceiling, so the
    throttled one dips while the other runs and is not made up in a rush afterwards (docs/API.md).

    Sized to the property, not to a load: the pacing rule itself is pure (the token bucket's unit tests); here
    what is checked end to end is that the run paces itself evenly at its rate and leaves the rest unpaced, which
    twelve seconds at a rate well below the mock's capacity show (bench/ measures throughput)."""
    # 1,500 unthrottled devices: measured over about half a second, their rate is not decided by one pause of the
    # machine (500, a fifth of a second, ran at 0.48x the rate alone in one CI run and at 0.63-0.93x in eight after).
    rate_per_minute, slow_devices, fast_devices = 9_000, 1_800, 1_500
    per_second_rate = rate_per_minute // 60
    burst = max(1, per_second_rate // 20)  # 50 ms of the rate (docs/API.md, "Throttling precision")
    expected = slow_devices / per_second_rate
    mock = environment.mock()
    mock.configure(record_limit=10_000)
    # A window of 30 requests: what the server has handed to APNs but the mock has not yet processed (a busy
    # machine starves the Python mock now and then) arrives late, on top of a later second's count.
    window = 30
    server = environment.server(mock, {"limits": LOAD_TEST_LIMITS,
                                       "apns": {"connectionsPerPool": 2, "streamsPerConnection": window // 2}},
                                name="throttle")
    client = Beams(server)
    slow, fast, warm = unique("slow"), unique("fast"), unique("warm")
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(slow_devices)], slow)
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(fast_devices)], fast)
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(fast_devices)], warm)
    # The unthrottled speed of this machine and mock, measured alone first.
    baseline = client.wait_finished(client.publish("interests", {"interests": [warm], "apns": alert("warm")}))
    assert baseline["apns"]["accepted"] == fast_devices

    throttled = client.publish("interests", {"interests": [slow], "apns": alert("slow"),
                                             "x_delivery": {"throttlePerMinute": rate_per_minute}})
    time.sleep(3.0)
    unthrottled = client.publish("interests", {"interests": [fast], "apns": alert("fast")})
    assert client.wait_finished(unthrottled, timeout=60)["apns"]["accepted"] == fast_devices
    slow_status = client.wait_finished(throttled, timeout=60)
    assert slow_status["apns"]["accepted"] == slow_devices, slow_status

    seen = arrivals(mock)
    slow_times, fast_times = seen[throttled], seen[unthrottled]
    alone = rate(seen[baseline["publishId"]])
    assert len(slow_times) == slow_devices and len(fast_times) == fast_devices
    counts = per_second(slow_times, slow_times[0], slow_times[-1])
    overlap = range(int(fast_times[0] - slow_times[0]), int(fast_times[-1] - slow_times[0]) + 1)
    detail = {"counts": counts, "overlap": list(overlap), "fast_rate": rate(fast_times), "alone": alone}
    print("throttle:", json.dumps(detail))
    # The pacer only ever holds back, so its guarantees are ceilings: no second carries more than the rate plus
    # its burst plus the window, and 1,800 take at least ~12 s. Dips below the rate come from a starved mock
    # or server (this machine is shared, and a stall of the Python mock shows as one low second followed by a
    # high one); so evenness is judged on two-second windows away from the unthrottled publish (and the two
    # seconds after it, while the window drains): at least half of them carry twice the rate ± 10 % even on a
    # machine whose load starves the mock for seconds at a time (on an idle one, all of them do).
    assert all(count <= per_second_rate + burst + window for count in counts), detail
    disturbed = set(range(overlap.start, overlap.stop + 2))
    windows = [sum(counts[second:second + 2]) for second in range(len(counts) - 1)
               if not disturbed.intersection(range(second, second + 2))]
    assert len(windows) >= 3, detail
    assert sum(1.8 * per_second_rate <= total <= 2.2 * per_second_rate for total in windows) >= 0.5 * len(windows), \
        (windows, detail)
    duration = slow_times[-1] - slow_times[0]
    lost = sum(max(0, per_second_rate - count) for count in counts) / per_second_rate
    assert 0.95 * expected <= duration <= expected + 0.5 + lost + 1.0, (duration, lost, detail)
    # Not held back: the unthrottled publish ran unpaced beside it and, with the throttled one, used the mock's
    # capacity (measured alone first) rather than waiting for the throttled one's pace.
    assert slow_times[0] < fast_times[0] and fast_times[-1] < slow_times[-1], detail
    during = sum(counts[second] for second in overlap if second < len(counts)) / max(1, len(overlap))
    assert rate(fast_times) >= 0.3 * alone, detail
    assert rate(fast_times) + during >= 0.6 * alone, detail


def test_throttled_publish_resumes_at_its_pace_after_kill_9(environment):
    """Killed mid-run, the restarted server resumes from the checkpoint with an empty bucket: the same pace, no
    catch-up burst, every device reached."""
    mock = environment.mock()
    # A window of 30 requests, as in the pacing test above: what a stalled Python mock had not yet processed
    # arrives late, on top of a later second's count, and no more than that.
    window = 30
    server = environment.server(mock, {"limits": LOAD_TEST_LIMITS,
                                       "apns": {"connectionsPerPool": 2, "streamsPerConnection": window // 2}},
                                name="throttle-restart")
    client = Beams(server)
    interest = unique("paced")
    tokens = [random_token() for _ in range(1_000)]
    register_devices(server, INSTANCE_ID, tokens, interest)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("paced"),
                                              "x_delivery": {"throttlePerMinute": 6_000}})
    wait_for(lambda: mock.stats()["requests"] >= 300, timeout=20)
    server.kill9()
    before = arrivals(mock)[publish_id]
    server.start()
    finished = Beams(server).wait_finished(publish_id, timeout=60)
    assert finished["apns"]["accepted"] == 1_000 and finished["attempts"] == 2, finished
    counts = sent_counts(mock, tokens)
    assert min(counts.values()) == 1, "every device got it"
    duplicates = sum(counts.values()) - 1_000
    assert duplicates <= 50, duplicates  # answered since the last checkpoint (200 ms at 100/s) plus in flight
    after = [t for t in arrivals(mock)[publish_id] if t > before[-1]]
    per = per_second(after, after[0], after[-1])
    # 100 per second, burst 5: no second after the restart carries a rush of what the outage delayed (hundreds);
    # a second after a stall of the mock carries at most the window on top (CI once saw 77 then 139 with the
    # default window of 200).
    assert per and all(count <= 100 + 5 + window for count in per), per
    assert after[-1] - after[0] >= (len(after) - 1) / 100 - 1.0, (len(after), after[-1] - after[0])


# MARK: - Cancel


def test_cancel_mid_fanout_stops_further_sends_and_reports_the_counts_so_far(environment):
    mock = environment.mock()
    server = environment.server(mock, {"limits": LOAD_TEST_LIMITS}, name="cancel")
    client = Beams(server)
    interest = unique("cancel")
    tokens = [random_token() for _ in range(3_000)]
    register_devices(server, INSTANCE_ID, tokens, interest)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("cancel"),
                                              "x_delivery": {"throttlePerMinute": 12_000}})
    wait_for(lambda: mock.stats()["requests"] >= 300, timeout=20)
    r = client.cancel_raw(publish_id)
    at_answer = mock.stats()["requests"]
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "cancelled", body
    # Nothing more is sent after the answer: not a single request reaches APNs afterwards.
    time.sleep(2.0)
    after = mock.stats()["requests"]
    assert after == at_answer, (at_answer, after)
    assert 300 <= after < 3_000, after
    status = client.status(publish_id)
    assert status["status"] == "cancelled", status
    assert status["apns"]["accepted"] == after and status["targets"] == after, (status, after)
    assert body["apns"]["accepted"] == after, body
    assert sum(sent_counts(mock, tokens).values()) == after

    again = client.cancel_raw(publish_id)
    assert again.status_code == 409 and set(again.json()) == {"error", "description"}, again.text
    assert "cancelled" in again.json()["description"]


def test_cancel_of_a_publish_waiting_for_a_window_another_publish_holds_answers_before_that_window_frees(environment):
    """Publish A's four requests hold the node's whole APNs window (1 connection x 4 streams) for 8 s; publish B's
    one notification waits for a slot. Cancelling B answers while A's requests are still on the wire, and B's
    notification never goes out. (Before, B's waiting submit ignored the cancel: the DELETE waited for A's answers,
    and B's notification was then sent.)"""
    mock = environment.mock()
    server = environment.server(mock, {"apns": {"connectionsPerPool": 1, "streamsPerConnection": 4}},
                                name="cancel-window")
    client = Beams(server)
    holding, waiting = unique("holds-window"), unique("waits-for-window")
    slow = [random_token() for _ in range(4)]
    for token in slow:
        mock.behave(token, delay_ms=8000)
        client.register(token, interests=[holding])
    blocked = random_token()
    client.register(blocked, interests=[waiting])
    # Like APNs, the stand-in allows one stream on a new connection until its first answer: open it first.
    warm_up = unique("warm-up")
    client.register(random_token(), interests=[warm_up])
    client.wait_finished(client.publish("interests", {"interests": [warm_up], "apns": alert("warm-up")}))
    a = client.publish("interests", {"interests": [holding], "apns": alert("a")})
    wait_for(lambda: mock.stats()["requests"] >= 4, timeout=10, message="A's requests did not fill the window")
    b = client.publish("interests", {"interests": [waiting], "apns": alert("b")})
    # B's one notification waits in the APNs client for a slot of the window.
    waiting_series = 'push_sender_waiting_for_window{platform="apns"} 1'
    wait_for(lambda: waiting_series in requests.get(server.url("/metrics"), verify=server.cert, timeout=5).text,
             timeout=10,
             message="B's notification is not waiting for the window")
    r = client.cancel_raw(b)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "cancelled", r.json()
    assert client.status(a)["apns"]["accepted"] == 0, "the cancel answered only once A's answers freed the window"
    client.wait_finished(a, timeout=30)
    time.sleep(0.5)
    assert mock.requests_for(blocked) == [], "the cancelled publish's notification went out after the window freed"


def test_cancel_a_scheduled_publish_and_the_refusals(env):
    server, mock = env
    client = Beams(server)
    interest = unique("cancel-scheduled")
    token = random_token()
    client.register(token, [interest])
    send_at = time.time() + 1.5
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("never"),
                                              "x_delivery": {"sendAt": rfc3339(send_at)}})
    r = client.cancel_raw(publish_id)
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    time.sleep(max(0.0, send_at + 1.0 - time.time()))
    assert mock.requests_for(token) == []
    assert client.status(publish_id)["status"] == "cancelled"

    finished = client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert("done")}))
    r = client.cancel_raw(finished["publishId"])
    assert r.status_code == 409 and "finished" in r.json()["description"], r.text
    r = client.cancel_raw("pubid-does-not-exist")
    assert r.status_code == 404 and set(r.json()) == {"error", "description"}, r.text
    r = client.cancel_raw(publish_id, secret="wrong-secret-0123456789abcdef0123")
    assert r.status_code == 401, r.text
    r = client.session.delete(server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/{publish_id}"), timeout=10)
    assert r.status_code == 400, r.text


# MARK: - Intake


def test_hostile_x_delivery_values_get_a_422_naming_the_member_and_nothing_is_queued(env):
    server, _ = env
    client = Beams(server)
    before = len(client.recent(limit=200))
    now = time.time()
    cases = [
        ({"sendAt": True}, "x_delivery.sendAt"),
        ({"sendAt": "2026-12-01 09:00"}, "x_delivery.sendAt"),
        ({"sendAt": "2026-12-01T09:00:00"}, "x_delivery.sendAt"),
        ({"sendAt": 10 ** 40}, "x_delivery.sendAt"),
        ({"sendAt": rfc3339(now + 400 * 86_400)}, "x_delivery.sendAt"),
        ({"sendAt": rfc3339(now - 3 * 86_400)}, "x_delivery.sendAt"),
        ({"expiresAt": rfc3339(now - 10)}, "x_delivery.expiresAt"),
        ({"sendAt": rfc3339(now + 60), "expiresAt": rfc3339(now + 30)}, "x_delivery.expiresAt"),
        ({"deliverAtLocalTime": "9am"}, "x_delivery.deliverAtLocalTime"),
        ({"deliverAtLocalTime": None, "throttlePerMinute": 0}, "x_delivery.throttlePerMinute"),
        ({"throttlePerMinute": 1.5}, "x_delivery.throttlePerMinute"),
        ({"throttlePerMinute": 10 ** 30}, "x_delivery.throttlePerMinute"),
        ({"throttlePerMinute": "fast"}, "x_delivery.throttlePerMinute"),
        ({"sendAfter": rfc3339(now + 60)}, "x_delivery.sendAfter"),
        ("soon", "x_delivery"),
        ([], "x_delivery"),
    ]
    for delivery, path in cases:
        r = client.publish_raw("/interests", {"interests": ["a"], "apns": alert(), "x_delivery": delivery})
        assert r.status_code == 422, (delivery, r.text)
        assert set(r.json()) == {"error", "description"}, r.text
        assert f"`{path}`" in r.json()["description"], (delivery, r.text)
    r = client.publish_raw("/interests", {"interests": ["a"], "apns": alert(), "x_delivery": {"throttlePerMinute": 5}},
                           headers={"X-Push-Delivery": json.dumps({"throttlePerMinute": 6})})
    assert r.status_code == 422 and "not both" in r.json()["description"], r.text
    r = client.publish_raw("/interests", {"interests": ["a"], "apns": alert()}, headers={"X-Push-Delivery": "{"})
    assert r.status_code == 422 and "X-Push-Delivery" in r.json()["description"], r.text
    assert len(client.recent(limit=200)) == before, "no refused publish was queued"


def test_header_alternative_and_the_python_sdk_carry_the_schedule(env):
    """The header is for SDKs that drop unknown body keys; the Python SDK forwards `x_delivery` unchanged."""
    from pusher_push_notifications import PushNotifications

    server, _ = env
    client = Beams(server)
    send_at = time.time() + 60
    r = client.publish_raw("/interests", {"interests": ["a"], "apns": alert()},
                           headers={"X-Push-Delivery": json.dumps({"sendAt": rfc3339(send_at)})})
    assert r.status_code == 200, r.text
    assert client.status(r.json()["publishId"])["status"] == "scheduled"
    assert client.cancel_raw(r.json()["publishId"]).status_code == 200

    sdk = PushNotifications(instance_id=INSTANCE_ID, secret_key=client.secret, endpoint=f"localhost:{server.port}")
    sdk.session.verify = server.cert  # the SDK ignores REQUESTS_CA_BUNDLE; session.verify works
    answer = sdk.publish_to_interests(["a"], {"apns": alert(), "x_delivery": {"sendAt": rfc3339(send_at)}})
    status = client.status(answer["publishId"])
    assert status["status"] == "scheduled" and abs(parse_time(status["scheduledFor"]) - send_at) < 0.002, status
    assert client.cancel_raw(answer["publishId"]).status_code == 200
