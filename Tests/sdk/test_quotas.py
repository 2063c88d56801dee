"""Quotas per instance end to end (docs/OPERATIONS.md "Many apps: quotas"): a registration past `quotas.devices` is
refused with 400 "Device could not be created…", the publish past `quotas.publishesPerDay` gets 429 with
`Retry-After` until 00:00 UTC and leaves nothing behind, and `quotas.notificationsPerMinute` paces an instance's
deliveries (shared by its publishes) instead of refusing them. Usage and limits show in /metrics and in the
console's overview. On PostgreSQL, two nodes count one day's publishes together."""
import datetime
import math
import os
import sys
import threading
import time

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, ROOT

LABEL = f'beams_instance="{INSTANCE_ID}"'


def metrics_text(server):
    return requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text


def series(text, name, **labels):
    """The value of the series `name{labels}` (labels in any order), None when absent."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        head, value = line.rsplit(" ", 1)
        found = dict(part.split("=", 1) for part in head[len(name) + 1:-1].split(","))
        if {k: v.strip('"') for k, v in found.items()} == labels:
            return float(value)
    return None


def seconds_to_utc_midnight(at):
    now = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    midnight = (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - now).total_seconds()


def test_a_new_device_past_the_device_quota_is_refused_with_400_and_known_tokens_still_register(environment):
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"quotas": {"devices": 2}}, name="device-quota")
    client = Beams(server)
    known = random_token()
    client.register(known)
    client.register(random_token())
    r = client.session.post(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                            json={"token": random_token(), "bundleIdentifier": "com.example.sdktest"}, timeout=10)
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "Bad request",
                        "description": "Device could not be created: the instance has reached its quota of 2 devices"}
    # An app launch re-registers a known token: still accepted at the quota.
    client.register(known)
    # The quota is the instance's: the other instance has none.
    Beams(server, NO_CREDENTIALS_INSTANCE_ID).register(random_token())
    text = metrics_text(server)
    assert series(text, "push_quota_refusals_total", beams_instance=INSTANCE_ID, quota="devices") == 1, text
    assert series(text, "push_quota_limit", beams_instance=INSTANCE_ID, quota="devices") == 2, text
    wait_for(lambda: series(metrics_text(server), "push_quota_usage", beams_instance=INSTANCE_ID, quota="devices") == 2,
             timeout=15, message="push_quota_usage never showed the two devices")
    assert f'beams_instance="{NO_CREDENTIALS_INSTANCE_ID}"' not in text, "an instance without quotas has no series"


def test_the_publish_past_the_daily_quota_gets_429_until_utc_midnight_and_nothing_of_it_is_stored_or_sent(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"console": {"enabled": True}},
                                instance_overrides={"quotas": {"publishesPerDay": 3}}, name="daily-quota")
    client = Beams(server)
    token = random_token()
    interest = unique("daily")
    client.register(token, [interest])
    accepted = [client.publish("interests", {"interests": [interest], "apns": alert(f"n{n}")}) for n in range(3)]
    asked_at = time.time()
    r = client.publish_raw("/interests", {"interests": [interest], "apns": alert("one too many")})
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["error"] == "Rate Limited", body
    midnight = datetime.datetime.fromtimestamp(asked_at + seconds_to_utc_midnight(asked_at) + 0.5,
                                               datetime.timezone.utc).strftime("%Y-%m-%dT00:00:00")
    assert body["description"].startswith(
        f"The instance has reached its quota of 3 publishes per day (UTC); it resets at {midnight}"), body
    retry_after = int(r.headers["Retry-After"])
    assert abs(retry_after - math.ceil(seconds_to_utc_midnight(asked_at))) <= 2, (retry_after, asked_at)
    # The users endpoint counts against the same quota.
    r = client.publish_raw("/users", {"users": ["u1"], "apns": alert("users")})
    assert r.status_code == 429 and "Retry-After" in r.headers, r.text

    for publish_id in accepted:
        client.wait_finished(publish_id)
    # Nothing of the refused publishes: three in the recent list, three deliveries, never the fourth's title.
    assert sorted(p["publishId"] for p in client.recent()) == sorted(accepted)
    time.sleep(0.5)
    sent = mock.requests_for(token)
    assert len(sent) == 3, sent
    assert "one too many" not in str(sent)

    text = metrics_text(server)
    assert series(text, "push_quota_refusals_total", beams_instance=INSTANCE_ID, quota="publishes_per_day") == 2, text
    assert series(text, "push_quota_limit", beams_instance=INSTANCE_ID, quota="publishes_per_day") == 3, text
    wait_for(lambda: series(metrics_text(server), "push_quota_usage", beams_instance=INSTANCE_ID,
                            quota="publishes_per_day") == 3,
             timeout=15, message="push_quota_usage never showed the day's three publishes")
    overview = requests.get(server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/console/overview"),
                            headers={"Authorization": f"Bearer {client.secret}"}, verify=server.cert, timeout=10).json()
    quotas = overview["quotas"]
    assert quotas["publishesPerDay"]["limit"] == 3 and quotas["publishesPerDay"]["used"] == 3, quotas
    assert quotas["publishesPerDay"]["resetsAt"].startswith(midnight), quotas
    assert quotas["devices"] == {"limit": None, "used": 1}, quotas


@pytest.mark.timing
def test_a_platform_budget_paces_the_instances_publishes_together_without_refusing_them(environment):
    """1,200 a minute on APNs (20 a second) for two publishes of 20 devices each: without the budget the 40
    deliveries leave within a fraction of a second; with it no second carries more than the budget, and the two
    publishes share it (40 deliveries take about two seconds, not one)."""
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"quotas": {"notificationsPerMinute": {"apns": 1200}}},
                                name="budget")
    client = Beams(server)
    interest = unique("budget")
    tokens = client.register_devices(20, [interest])
    publishes = [client.publish("interests", {"interests": [interest], "apns": alert(f"p{n}")}) for n in range(2)]
    for publish_id in publishes:
        assert client.wait_finished(publish_id, timeout=60)["apns"]["accepted"] == 20
    times = sorted(request["time"] for token in tokens for request in mock.requests_for(token))
    assert len(times) == 40, len(times)
    busiest = max(sum(1 for t in times[i:] if t - start < 1.0) for i, start in enumerate(times))
    span = times[-1] - times[0]
    print(f"budget: 40 deliveries at 1,200/min took {span:.2f} s, busiest second {busiest}")
    # 20 a second plus the one token a bucket starts with, plus one for the arrival jitter of the mock's clock.
    assert busiest <= 22, (busiest, times)
    assert span >= 1.8, f"40 deliveries at 20 a second took {span:.2f} s"
    text = metrics_text(server)
    assert series(text, "push_delivery_budget_per_minute", beams_instance=INSTANCE_ID, platform="apns") == 1200, text
    assert series(text, "push_delivery_budget_node_share_per_minute", beams_instance=INSTANCE_ID,
                  platform="apns") == 1200, text
    assert series(text, "push_delivery_budget_sent_total", beams_instance=INSTANCE_ID, platform="apns") == 40, text


# MARK: Two nodes on one PostgreSQL database

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import postgresql_cluster  # noqa: E402

needs_postgresql = pytest.mark.skipif(
    not postgresql_cluster.installed() and os.environ.get("CI") != "true",
    reason="PostgreSQL 15 is not installed (apt-get install postgresql)")


@needs_postgresql
def test_two_nodes_on_one_database_count_one_daily_quota_together_and_split_the_budget(environment):
    """Eight publishes at once, four through each node, against a quota of five a day: exactly five are accepted
    (the store counts them in the publishes' transactions), the other three get 429 whichever node they reached.
    A per-minute budget is split: once each node's heartbeat sees the other, each paces half of it."""
    storage = postgresql_cluster.storage_section("quotas")
    mock = environment.mock()
    quotas = {"quotas": {"publishesPerDay": 5, "notificationsPerMinute": {"apns": 1200}}}
    node_a = environment.server(mock, {"storage": storage}, quotas, name="quota-a")
    node_b = environment.server(mock, {"storage": storage}, quotas, name="quota-b")
    interest = unique("nodes")
    Beams(node_a).register(random_token(), [interest])
    statuses = []
    barrier = threading.Barrier(8)

    def publish(node):
        client = Beams(node)
        barrier.wait()
        r = client.publish_raw("/interests", {"interests": [interest], "apns": alert("both")})
        statuses.append((r.status_code, r.headers.get("Retry-After")))

    threads = [threading.Thread(target=publish, args=(node,)) for node in [node_a, node_b] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(status for status, _ in statuses) == [200] * 5 + [429] * 3, statuses
    assert all(retry for status, retry in statuses if status == 429), statuses
    # Either node refuses the next one and reports the same usage.
    for node in (node_a, node_b):
        assert Beams(node).publish_raw("/interests", {"interests": [interest], "apns": alert("x")}).status_code == 429
        wait_for(lambda: series(metrics_text(node), "push_quota_usage", beams_instance=INSTANCE_ID,
                                quota="publishes_per_day") == 5, timeout=15, message="usage on every node")
    for node in (node_a, node_b):
        wait_for(lambda: series(metrics_text(node), "push_delivery_budget_node_share_per_minute",
                                beams_instance=INSTANCE_ID, platform="apns") == 600,
                 timeout=30, message="each node paces half the budget once it sees two live nodes")
