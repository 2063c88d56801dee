"""Two push-server nodes on one PostgreSQL database with `storage.postgresql.shardSize` set: one large publish is
split into shards that both nodes deliver (each device once), a paced publish is not split (its pace is a ceiling
for the whole publish), /ready lists the live nodes, and when one node is killed (-9) mid fan-out the survivor takes
its shards over after their lease.

The nodes are set up as in test_postgresql_nodes.py (its helpers are used here); a file of its own so that make
test's pytest workers run the two halves side by side (`--dist loadfile`)."""
import time
import uuid

import pytest
import requests

from beams import Beams, wait_for
from bulk import register_devices
from crash import CHECKPOINT_INTERVAL_S, metric
from harness import INSTANCE_ID
from test_postgresql_nodes import CONNECTIONS, STREAMS, accepted_by, accepted_per_token, requests_seen, two_nodes


# 20 shards, as many as with 20,000 devices in shards of 1,000, which is what the tests need: enough shards for
# both nodes to take some and for a kill at 40 % to leave some to the survivor. The size only scales the time, and
# registering the devices is most of it (5,000 took 9 times as long as 1,000 on a loaded machine); 100 is the
# smallest shard size the server accepts.
SHARD_DEVICES = 2_000
SHARD_SIZE = 100


@pytest.fixture(scope="module")
def sharded_nodes(environment):
    """Two more nodes on a database of their own, splitting publishes into shards of SHARD_SIZE devices."""
    return two_nodes(environment, "shards", "shard-node", shardSize=SHARD_SIZE)


def shard_publish(node_a, node_b, mock, delay_ms):
    """Registers SHARD_DEVICES devices on a new interest and publishes to it through node B. - Returns: the
    tokens, the publish id and a function reading the mock's requests since the publish."""
    interest = f"shards-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(SHARD_DEVICES)]
    register_devices(node_a, INSTANCE_ID, tokens, interest, concurrency=64)
    mock.configure(record=False, delay_ms=delay_ms)
    seen = requests_seen(mock)
    before = seen()
    publish_id = Beams(node_b).publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "shards"}}})
    return tokens, publish_id, lambda: seen() - before


def test_one_large_publish_is_delivered_by_both_nodes_each_device_once(sharded_nodes):
    node_a, node_b, mock = sharded_nodes
    before = {"a": accepted_by(node_a), "b": accepted_by(node_b)}
    # 50 ms: 2.5 times the 20 ms it had with 2.5 times more devices, so the fan-out lasts as long and both nodes
    # have the time to claim shards.
    tokens, publish_id, _ = shard_publish(node_a, node_b, mock, delay_ms=50)

    status = Beams(node_a).wait_finished(publish_id, timeout=180)
    assert status["status"] == "finished", status
    assert status["targets"] == SHARD_DEVICES and status["apns"]["accepted"] == SHARD_DEVICES, status
    counts = accepted_per_token(mock, tokens)
    assert counts.count(1) == SHARD_DEVICES, {"missing": counts.count(0), "repeated": sum(c > 1 for c in counts)}
    # Each node's own count of the answers it got: both delivered part of the one publish, together all of it.
    by_a, by_b = accepted_by(node_a) - before["a"], accepted_by(node_b) - before["b"]
    assert by_a > 0 and by_b > 0, (by_a, by_b)
    assert by_a + by_b == SHARD_DEVICES, (by_a, by_b)
    # Both nodes' heartbeats are in the shared table. Each node counts the live ones at its own heartbeat, every
    # 10 s, so node A's gauge can still hold the count of a heartbeat it made before node B's first one: read it
    # until a heartbeat of A's has come after B's (at most one interval, and the margin a loaded machine needs).
    def nodes_live():
        return metric(requests.get(node_a.url("/metrics"), verify=node_a.cert, timeout=10).text, "push_nodes_live")

    wait_for(lambda: nodes_live() == 2, timeout=25, interval=0.5, message="push_nodes_live never read 2 on node A")


def test_a_paced_publish_on_sharded_nodes_keeps_its_pace_whole_and_estimates_at_most_that_pace(sharded_nodes):
    """`x_delivery.throttlePerMinute` is a ceiling for the whole publish (docs/API.md). A publish large enough to be
    split into shards is delivered whole by one run when it is paced: split, every shard's run kept the publish's
    pace and the nodes together sent several times faster. Its completion estimate, asked of either node, rests on
    at most that pace."""
    node_a, node_b, mock = sharded_nodes
    devices, per_minute = 600, 6_000  # 6 shards of SHARD_SIZE if it were split; 6 s at 100 per second
    interest = f"paced-shards-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(devices)]
    register_devices(node_a, INSTANCE_ID, tokens, interest, concurrency=64)
    mock.configure(record=False, delay_ms=0)
    before = {"a": accepted_by(node_a), "b": accepted_by(node_b)}
    started = time.monotonic()
    publish_id = Beams(node_b).publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "paced"}},
                                                     "x_delivery": {"throttlePerMinute": per_minute}})
    pace = per_minute / 60
    rates = []

    def finished():
        status = Beams((node_a, node_b)[len(rates) % 2]).status(publish_id)
        if "estimateRatePerSecond" in status:
            rates.append(status["estimateRatePerSecond"])
        return status if status["status"] not in ("queued", "running") else None

    status = wait_for(finished, timeout=120, interval=0.2, message="the paced publish never finished")
    elapsed = time.monotonic() - started
    assert status["status"] == "finished" and status["apns"]["accepted"] == devices, status
    # The pacer lets the first second's worth through at once; the rest follows at the pace.
    assert elapsed >= (devices - pace) / pace * 0.9, f"{devices} devices in {elapsed:.1f} s at {pace:.0f}/s"
    counts = accepted_per_token(mock, tokens)
    assert counts.count(1) == devices, {"missing": counts.count(0), "repeated": sum(c > 1 for c in counts)}
    by_a, by_b = accepted_by(node_a) - before["a"], accepted_by(node_b) - before["b"]
    assert sorted((by_a, by_b)) == [0, devices], (by_a, by_b)  # one run, on one node
    assert rates and max(rates) <= pace * 1.05, rates
    assert "estimatedCompletionAt" not in status and "remainingTargets" not in status, status


def ready_nodes(server):
    """The `nodes` check of the server's detailed /ready (a loopback peer gets the details)."""
    response = requests.get(server.url("/ready"), verify=server.cert, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["checks"]["nodes"]


def test_ready_lists_the_live_nodes_and_drops_one_that_stops_cleanly(sharded_nodes):
    node_a, node_b, _ = sharded_nodes
    # Each node records its heartbeat as its engine starts, so both are listed within moments, by either node.
    wait_for(lambda: ready_nodes(node_a)["live"] == 2, timeout=15, message="node A never listed both nodes")
    seen_by_a = ready_nodes(node_a)
    seen_by_b = ready_nodes(node_b)
    assert seen_by_a["live"] == 2 and len(seen_by_a["list"]) == 2, seen_by_a
    assert {n["id"] for n in seen_by_a["list"]} == {n["id"] for n in seen_by_b["list"]}
    assert seen_by_a["self"] != seen_by_b["self"] and seen_by_a["selfLive"] and seen_by_b["selfLive"]
    assert seen_by_a["liveWithinSeconds"] == 30 and seen_by_a["truncated"] is False
    assert all(n["version"] and n["startedAt"] <= n["lastSeen"] for n in seen_by_a["list"]), seen_by_a
    # A clean stop deletes the node's row: node A lists only itself at once, not after 30 s of silence.
    node_b.stop()
    try:
        after = ready_nodes(node_a)
        assert [n["id"] for n in after["list"]] == [seen_by_a["self"]] and after["live"] == 1, after
    finally:
        node_b.start()


def test_the_survivor_finishes_the_shards_of_a_node_killed_at_40_percent(sharded_nodes):
    node_a, node_b, mock = sharded_nodes
    # 250 ms: 2.5 times the 100 ms (MOCK_DELAY_MS) it had with 2.5 times more devices, so the fan-out lasts as long
    # and the kill at 40 % still leaves shards to the survivor.
    delay_ms = 250
    tokens, publish_id, sent = shard_publish(node_a, node_b, mock, delay_ms=delay_ms)
    wait_for(lambda: sent() >= SHARD_DEVICES * 0.4, timeout=120, interval=0.01, message="the fan-out never got going")
    node_b.kill9()
    assert sent() < SHARD_DEVICES, "the publish finished before the kill"

    status = Beams(node_a).wait_finished(publish_id, timeout=240)
    assert status["status"] == "finished", status
    counts = accepted_per_token(mock, tokens)
    assert counts.count(0) == 0, f"{counts.count(0)} devices never reached"
    duplicates = sum(c - 1 for c in counts if c > 1)
    # Re-sent by node A: what B had in flight (its one APNs window, shared by all its shards) plus what B had
    # answered since its shards' last checkpoints.
    rate = CONNECTIONS * STREAMS / (delay_ms / 1000)
    assert duplicates <= CONNECTIONS * STREAMS + rate * 2 * CHECKPOINT_INTERVAL_S, duplicates
    assert status["apns"]["accepted"] >= SHARD_DEVICES, status
    node_b.start()

