"""Publish slots end to end (docs/ARCHITECTURE.md, "Publish slots"): a paced publish holds no slot while it waits
for its next delivery, so eight campaigns at one delivery a minute no longer stop every other instance's publishes
on the node, and a paced publish parked between its deliveries still survives kill -9."""
import time

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, KEY_ID, TEAM_ID, TOPIC, Server

OTHER_ID = "c0ffee00-5a1e-4a7b-9c3d-2e1f0a9b8c7d"
OTHER_SECRET = "slots-test-other-instance-secret-0123"


def two_instance_server(environment, mock, name, overrides=None):
    """A server whose second instance (`OTHER_ID`) also sends to the mock."""
    directory = environment.directory / name
    directory.mkdir(exist_ok=True)
    apns = {"teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(environment.p8), "topic": TOPIC,
            "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{mock.port}",
            "caFile": mock.ca_file}
    server = Server(directory, mock, environment.p8, environment.cert, environment.key, overrides,
                    extra_instances=[{"id": OTHER_ID, "secretKey": OTHER_SECRET, "apns": apns}])
    environment.processes.append(server)
    return server


def first_delivery(b, mock, token, timeout):
    """Instance B's one-device interest publish to `token` (registered here), unpaced: (its publish ID, the seconds
    from the publish to the mock's first request for the device)."""
    interest_b = unique("reset")
    b.register(token, [interest_b])
    started = time.time()
    publish_id = b.publish("interests", {"interests": [interest_b], "apns": alert("password reset")})
    arrived = wait_for(lambda: mock.requests_for(token), timeout=timeout, message="instance B's publish never arrived")
    return publish_id, arrived[0]["time"] - started


def test_eight_campaigns_at_one_a_minute_do_not_keep_another_instances_publish_queued(environment):
    """Eight publishes of instance A with `throttlePerMinute: 1` (each sends its first device at once, the next a
    minute later) used to hold the node's eight slots (`engine.concurrentPublishes`) for that minute and more:
    instance B's one-device publish stayed `queued` behind them."""
    mock = environment.mock()
    server = two_instance_server(environment, mock, "slots")
    a, b = Beams(server), Beams(server, OTHER_ID, OTHER_SECRET)
    interest = unique("campaign")
    a.register_devices(2, [interest])
    campaigns = [a.publish("interests", {"interests": [interest], "apns": alert(f"campaign {n}"),
                                         "x_delivery": {"throttlePerMinute": 1}}) for n in range(8)]
    # Every campaign runs and has sent its first delivery; the second waits a minute.
    wait_for(lambda: all(a.status(p)["status"] == "running" for p in campaigns), timeout=20,
             message="the eight campaigns never all ran")
    wait_for(lambda: mock.stats()["requests"] >= 8, timeout=20, message="the campaigns' first deliveries")

    # One device of instance B, by interest: the same kind of publish as the campaigns, only unpaced.
    publish_id, took = first_delivery(b, mock, random_token(), timeout=60)
    print(f"slots: instance B's publish to first delivery behind eight paced campaigns: {took * 1000:.0f} ms")
    assert took < 2.0, f"instance B's one-device publish took {took:.1f} s behind eight paced campaigns"
    assert b.wait_finished(publish_id, timeout=10)["apns"]["accepted"] == 1

    # The campaigns still pace: none has sent its second device yet, and each is still running.
    assert mock.stats()["requests"] == 8 + 1, mock.stats()
    assert all(a.status(p)["status"] == "running" for p in campaigns)
    # A parked campaign is cancelled at once with its final counts.
    for publish_id in campaigns:
        answer = a.cancel(publish_id)
        assert answer["status"] == "cancelled", answer
    assert mock.stats()["requests"] == 9, "nothing more went out after the cancels"


def test_paced_publish_parked_between_deliveries_resumes_after_kill_9(environment):
    """At 120 a minute the run waits half a second for each delivery, parked without a slot (its lease still
    renewed): killed there, the restarted server resumes it from its checkpoint and every device gets it."""
    mock = environment.mock()
    # A stable node identity: on PostgreSQL the restart then takes the dead process's lease at once.
    server = two_instance_server(environment, mock, "slots-restart", {"engine": {"nodeId": "slots-restart"}})
    client = Beams(server)
    interest = unique("parked")
    tokens = client.register_devices(6, [interest])
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("paced"),
                                              "x_delivery": {"throttlePerMinute": 120}})
    wait_for(lambda: mock.stats()["requests"] >= 2, timeout=20, message="the first paced deliveries")
    # Between two deliveries: the run is parked (a checkpoint every 200 ms has written what was answered).
    time.sleep(0.3)
    server.kill9()
    server.start()
    finished = Beams(server).wait_finished(publish_id, timeout=30)
    assert finished["apns"]["accepted"] == 6 and finished["attempts"] == 2, finished
    counts = {token: len(mock.requests_for(token)) for token in tokens}
    assert min(counts.values()) == 1, counts
    # What a crash can repeat: the delivery in flight or answered since the last checkpoint.
    assert sum(counts.values()) - 6 <= 1, counts


def test_another_instances_publish_starts_at_once_behind_a_backlog_of_slow_publishes(environment):
    """Instance A fills every publish slot (`engine.concurrentPublishes`, 8) with publishes whose APNs answers take
    3 s, and queues four more behind them. Instance B's one-device interest publish used to wait in the store
    behind A's older queued jobs until A's runs ended (claims went oldest first, and only while a slot was free):
    now the claim prefers an instance with no run on the node, and such an instance gets a floor slot at once."""
    mock = environment.mock()
    server = two_instance_server(environment, mock, "backlog")
    a, b = Beams(server), Beams(server, OTHER_ID, OTHER_SECRET)
    interest = unique("bulk")
    prefix = "5104"
    devices = 120
    for _ in range(devices):
        a.register(prefix + random_token()[len(prefix):], [interest])
    body = {"interests": [interest], "apns": alert("bulk")}
    # Warm: every APNs connection is open and has had its first answer (a new connection sends one request until
    # then), so what follows waits for publish slots, not for connections.
    a.wait_finished(a.publish("interests", body), timeout=20)
    mock.behave(prefix + "*", delay_ms=3000)
    running = [a.publish("interests", body) for _ in range(8)]
    wait_for(lambda: all(a.status(p)["status"] == "running" for p in running), timeout=20,
             message="A's eight publishes never all ran")
    backlog = [a.publish("interests", body) for _ in range(4)]

    token = random_token()
    while token.startswith(prefix):
        token = random_token()
    publish_id, took = first_delivery(b, mock, token, timeout=30)
    print(f"slots: instance B's publish to first delivery behind A's slow publishes and backlog: {took * 1000:.0f} ms")
    assert took < 2.0, f"instance B's one-device publish took {took:.1f} s behind instance A's backlog"
    # A's backlog waits for A's own slots (the floor slot is B's alone): nothing of it has gone out yet, since
    # the eight running publishes' answers take 3 s.
    assert mock.stats()["requests"] <= 9 * devices + 1, mock.stats()
    assert b.wait_finished(publish_id, timeout=10)["apns"]["accepted"] == 1
    for publish_id in running + backlog:
        assert a.wait_finished(publish_id, timeout=60)["apns"]["accepted"] == devices
    assert mock.stats()["requests"] == 13 * devices + 1, "every device of every publish exactly once"
