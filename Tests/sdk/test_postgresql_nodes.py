"""Two push-server nodes on one PostgreSQL database (storage.backend "postgresql"): a token registered through
both at once is one device, and when the node delivering a publish is killed (-9) mid fan-out the other node takes
the publish over after its lease and finishes it: every device reached, duplicates bounded by what was in flight.
A cancel through one node stops the fan-out the other node runs, at once (LISTEN/NOTIFY) or at that node's next
lease renewal. (The same with publishes split into shards: test_postgresql_shards.py.)

Each node is a real server process with its own directory; they share the strict mock APNs and the database of the
test run's throwaway PostgreSQL cluster (Tests/Support/postgresql_cluster.py)."""
import threading
import time
import uuid

import pytest
import requests

from beams import Beams, wait_for
from bulk import register_devices
from crash import CHECKPOINT_INTERVAL_S, LEASE_SECONDS, metric
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, postgresql_cluster_or_skip_module

postgresql_cluster = postgresql_cluster_or_skip_module()

DEVICES = 2000
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 2, 50, 100


def two_nodes(environment, database, name, **postgresql):
    """Two nodes (`name`-a, `name`-b) on a new database of the shared cluster and one mock APNs; `postgresql`: more
    `storage.postgresql` settings. - Returns: (node A, node B, mock)."""
    storage = postgresql_cluster.storage_section(database, **postgresql)
    mock = environment.mock()
    overrides = {"storage": storage, "engine": {"leaseSeconds": LEASE_SECONDS},
                 "apns": {"connectionsPerPool": CONNECTIONS, "streamsPerConnection": STREAMS},
                 "limits": LOAD_TEST_LIMITS}
    return (environment.server(mock, overrides, name=f"{name}-a"), environment.server(mock, overrides, name=f"{name}-b"),
            mock)


def requests_seen(mock):
    """A function reading how many requests the mock has received so far (its /stats without per-token counts)."""
    control = requests.Session()
    return lambda: control.get(f"{mock.control}/stats", params={"tokens": "0"}, timeout=30).json()["requests"]


@pytest.fixture(scope="module")
def nodes(environment):
    return two_nodes(environment, "nodes", "node")


def test_one_token_registered_through_two_nodes_at_once_is_one_device(nodes):
    node_a, node_b, _ = nodes
    token = uuid.uuid4().hex + uuid.uuid4().hex
    ids = []
    barrier = threading.Barrier(8)

    def register(server):
        barrier.wait()
        r = requests.post(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                          json={"token": token, "bundleIdentifier": "com.example.sdktest"},
                          verify=server.cert, timeout=10)
        assert r.status_code == 200, r.text
        ids.append(r.json()["id"])

    threads = [threading.Thread(target=register, args=(server,)) for server in [node_a, node_b] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 8 and len(set(ids)) == 1, ids
    for server in (node_a, node_b):
        r = requests.get(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{ids[0]}"),
                         verify=server.cert, timeout=10)
        assert r.status_code == 200 and r.json()["id"] == ids[0], r.text


def running_and_other(node_a, node_b):
    """(the node delivering the one running publish, the other node), from their /metrics: both wake for a new
    publish (LISTEN/NOTIFY), so either may have claimed it."""
    def running(server):
        text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
        return metric(text, "push_publish_jobs_running")

    pair = wait_for(lambda: (node_a, node_b) if running(node_a) else (node_b, node_a) if running(node_b) else None,
                    timeout=30, interval=0.01, message="no node runs the publish")
    return pair


def test_the_other_node_finishes_the_publish_of_a_node_killed_mid_fanout(nodes):
    node_a, node_b, mock = nodes
    interest = f"nodes-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(DEVICES)]
    register_devices(node_a, INSTANCE_ID, tokens, interest)
    mock.configure(record=False, delay_ms=MOCK_DELAY_MS)
    via_b = Beams(node_b)
    publish_id = via_b.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "two nodes"}}})
    seen = requests_seen(mock)
    wait_for(lambda: seen() >= DEVICES * 0.4, timeout=60, interval=0.01, message="the fan-out never got going")
    victim, survivor = running_and_other(node_a, node_b)
    victim.kill9()
    try:
        at_kill = seen()
        assert at_kill < DEVICES, "the publish finished before the kill"
        status = Beams(survivor).wait_finished(publish_id, timeout=120)
    finally:
        victim.start()
    assert status["status"] == "finished", status
    assert status["attempts"] == 2, status
    assert status["targets"] == DEVICES and status["apns"]["accepted"] == DEVICES, status
    per_token = requests.get(f"{mock.control}/stats", timeout=30).json()["per_token"]
    accepted = {token: counts.get("200", 0) for token, counts in per_token.items()}
    assert sum(1 for token in tokens if accepted.get(token, 0) == 0) == 0, "a device was never reached"
    duplicates = sum(max(0, accepted.get(token, 0) - 1) for token in tokens)
    # Re-sent by node A: what B had in flight plus what it had answered since its last checkpoint.
    rate = CONNECTIONS * STREAMS / (MOCK_DELAY_MS / 1000)
    assert duplicates <= CONNECTIONS * STREAMS + rate * 2 * CHECKPOINT_INTERVAL_S, duplicates


def test_a_node_restarted_under_its_node_id_resumes_at_once_and_a_twin_cannot_start(environment):
    """With `engine.nodeId` the restarted process holds the identity the killed one held (a session advisory lock
    PostgreSQL dropped with the dead process's connection), so it takes the identity's leases over at once instead
    of waiting out the lease (the default 30 s here). A second live process under the same identity fails to
    start."""
    storage = postgresql_cluster.storage_section("restart")
    mock = environment.mock()
    overrides = {"storage": storage, "engine": {"nodeId": "node-restart-1"},
                 "apns": {"connectionsPerPool": CONNECTIONS, "streamsPerConnection": STREAMS},
                 "limits": LOAD_TEST_LIMITS}
    node = environment.server(mock, overrides, name="restart")
    interest = f"restart-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(DEVICES)]
    register_devices(node, INSTANCE_ID, tokens, interest)
    mock.configure(record=False, delay_ms=MOCK_DELAY_MS)
    publish_id = Beams(node).publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "restart"}}})
    seen = requests_seen(mock)
    wait_for(lambda: seen() >= DEVICES * 0.4, timeout=60, interval=0.01, message="the fan-out never got going")
    node.kill9()
    assert seen() < DEVICES, "the publish finished before the kill"

    node.start()
    healthy = time.monotonic()
    wait_for(lambda: accepted_by(node) > 0, timeout=60, interval=0.01, message="the restarted node never sent")
    resume_seconds = time.monotonic() - healthy
    print(f"the restarted node had its first APNs answer {resume_seconds:.2f} s after /health answered")
    # Generous for a loaded machine; the dead process's lease had more than 25 s to run.
    assert resume_seconds < 5, resume_seconds

    with pytest.raises(RuntimeError, match="exited"):
        environment.server(mock, overrides, name="restart-twin")
    twin_log = (environment.directory / "restart-twin" / "server.log").read_text()
    assert "node-restart-1" in twin_log and "never share" in twin_log, twin_log[-2000:]

    status = Beams(node).wait_finished(publish_id, timeout=120)
    assert status["status"] == "finished" and status["attempts"] == 2, status
    assert status["targets"] == DEVICES and status["apns"]["accepted"] == DEVICES, status
    counts = accepted_per_token(mock, tokens)
    assert counts.count(0) == 0, f"{counts.count(0)} devices never reached"
    duplicates = sum(c - 1 for c in counts if c > 1)
    # Re-sent after the restart: what was in flight plus what was answered since the last checkpoint.
    rate = CONNECTIONS * STREAMS / (MOCK_DELAY_MS / 1000)
    assert duplicates <= CONNECTIONS * STREAMS + rate * 2 * CHECKPOINT_INTERVAL_S, duplicates


def test_cancel_through_one_node_stops_the_fanout_the_other_node_runs(nodes):
    """One node runs the publish; the cancel goes to the other, which has no run to stop and answers
    `cancelling`. The running node learns of it at once (LISTEN/NOTIFY), at the latest at its next lease renewal
    (a third of the lease), stops sending and ends the publish `cancelled` long before its fan-out would have
    finished; the counts are what the mock accepted."""
    node_a, node_b, mock = nodes
    interest = f"nodes-cancel-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(DEVICES)]
    register_devices(node_a, INSTANCE_ID, tokens, interest)
    delay_ms = 500
    rate = CONNECTIONS * STREAMS / (delay_ms / 1000)  # 200/s: the whole fan-out would take 10 s
    mock.configure(record=False, delay_ms=delay_ms)
    seen = requests_seen(mock)
    before = seen()
    publish_id = Beams(node_b).publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "stop"}}})
    wait_for(lambda: seen() - before >= rate, timeout=60, interval=0.01, message="the fan-out never got going")
    _, other = running_and_other(node_a, node_b)
    via_other = Beams(other)
    r = via_other.cancel_raw(publish_id)
    at_cancel = seen() - before
    assert r.status_code == 200, r.text
    # The other node has no run to stop: the publish is marked (the runner may already have stopped).
    assert r.json()["status"] in ("cancelling", "cancelled"), r.json()

    status = wait_for(lambda: (s := via_other.status(publish_id))["status"] not in ("running", "cancelling") and s,
                      timeout=LEASE_SECONDS, interval=0.05,
                      message="the running node never stopped the cancelled publish")
    assert status["status"] == "cancelled", status
    sent = seen() - before
    assert sent < DEVICES, "the fan-out ran to its end"
    # What the running node handed to its senders until its next renewal (a third of the lease, plus slack), and
    # what was in flight.
    assert sent - at_cancel <= rate * (LEASE_SECONDS / 3 + 1.0) + CONNECTIONS * STREAMS, (at_cancel, sent)
    time.sleep(1.0)
    assert seen() - before == sent, "sent after the publish ended cancelled"
    per_token = requests.get(f"{mock.control}/stats", timeout=30).json()["per_token"]
    accepted = sum(per_token.get(token, {}).get("200", 0) for token in tokens)
    # Notifications still waiting for room in the window when the cancel arrived were never sent: counted
    # `Cancelled` (docs/API.md, "cancel").
    cancelled = status["apns"]["failedByReason"].get("Cancelled", 0)
    assert set(status["apns"]["failedByReason"]) <= {"Cancelled"}, status
    assert status["apns"]["accepted"] == accepted and status["targets"] == accepted + cancelled, (status, accepted)
    mock.configure(delay_ms=0)


def accepted_by(server):
    """APNs notifications this node got a 200 for, from its /metrics (labelled push_notifications_total)."""
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("push_notifications_total{") and 'status="200"' in line)


def accepted_per_token(mock, tokens):
    per_token = requests.get(f"{mock.control}/stats", timeout=30).json()["per_token"]
    return [per_token.get(token, {}).get("200", 0) for token in tokens]
