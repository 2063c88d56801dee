"""The Huawei OAuth token is shared by every node on one PostgreSQL database and survives restarts (docs/API.md
"Huawei Push Kit"): Huawei blocks an app that asks for more than 1,000 tokens in 5 minutes, so two nodes publishing
to HMS devices at once must make one token request between them, and a restarted node must reuse the stored token.

Two real server processes on a database of the run's throwaway PostgreSQL cluster, one strict HMS stand-in
(Tests/Support/mock_hms.py) whose OAuth endpoint counts the token requests."""
import threading

import pytest
import requests

from beams import Beams, unique
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, postgresql_cluster_or_skip_module
from platform_mocks import MockHMS
from test_hms import hms_body, hms_token

postgresql_cluster = postgresql_cluster_or_skip_module()

DEVICES = "/device_api/v1/instances/{instance}/devices"
# Rounds of simultaneous publishes through both nodes until each node has sent to Huawei itself (which node claims
# a publish is the engine's choice; the property needs both to have needed a token).
MAX_ROUNDS = 6


@pytest.fixture(scope="module")
def hms_nodes(environment):
    """Nodes A and B on a new database with the same `hms` section, and the HMS stand-in."""
    storage = postgresql_cluster.storage_section("hmsnodes")
    hms = MockHMS(environment.directory)
    environment.processes.append(hms)
    mock = environment.mock()
    overrides = {"storage": storage, "limits": LOAD_TEST_LIMITS}
    nodes = [environment.server(mock, overrides, {"hms": hms.config()}, name=f"hms-node-{n}") for n in "ab"]
    return nodes[0], nodes[1], hms


def register(server, interest, count):
    client = Beams(server)
    for _ in range(count):
        r = client.session.post(server.url(DEVICES.format(instance=INSTANCE_ID) + "/hms"),
                                json={"token": hms_token()}, timeout=10)
        assert r.status_code == 200, r.text
        r = client.session.put(server.url(f"{DEVICES.format(instance=INSTANCE_ID)}/hms/{r.json()['id']}/interests"),
                               json={"interests": [interest]}, timeout=10)
        assert r.status_code == 200, r.text


def hms_sent_by(server):
    """HMS deliveries this node made, from its /metrics (`push_notifications_total{platform="hms",…}`)."""
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("push_notifications_total{") and 'platform="hms"' in line)


def publish_at_once(nodes, interest, per_node=3):
    """`per_node` publishes through each node, all released together. - Returns: their final statuses."""
    barrier = threading.Barrier(len(nodes) * per_node)
    ids, errors = [], []

    def publish(server):
        client = Beams(server)
        barrier.wait()
        try:
            ids.append(client.publish("interests", hms_body(interest)))
        except Exception as error:  # noqa: BLE001  (reported by the caller)
            errors.append(error)

    threads = [threading.Thread(target=publish, args=(server,)) for server in nodes * per_node]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return [Beams(nodes[0]).wait_finished(publish_id, timeout=60) for publish_id in ids]


def test_two_nodes_share_one_token_and_a_restarted_node_reuses_it(hms_nodes):
    node_a, node_b, hms = hms_nodes
    interest = unique("hms-nodes")
    register(node_a, interest, 3)
    assert hms.stats()["token_requests"] == 0

    rounds = 0
    while rounds < MAX_ROUNDS and not (hms_sent_by(node_a) and hms_sent_by(node_b)):
        rounds += 1
        for status in publish_at_once([node_a, node_b], interest):
            assert status["hms"]["accepted"] == 3 and status["hms"]["failed"] == 0, status
    sent = {"a": hms_sent_by(node_a), "b": hms_sent_by(node_b)}
    print(f"rounds until both nodes sent to Huawei: {rounds}; deliveries per node {sent}")
    assert sent["a"] > 0 and sent["b"] > 0, f"one node claimed every publish in {rounds} rounds: {sent}"
    stats = hms.stats()
    # Both nodes sent to Huawei with a token; only one of them asked for it.
    assert stats["token_requests"] == 1 and stats["tokens_issued"] == 1, stats

    # A restarted node reads the stored token instead of asking; node A is stopped so that B must send.
    node_b.stop()
    node_b.start()
    node_a.stop()
    try:
        before = hms_sent_by(node_b)
        status = Beams(node_b).wait_finished(Beams(node_b).publish("interests", hms_body(interest)), timeout=60)
        assert status["hms"]["accepted"] == 3, status
        assert hms_sent_by(node_b) - before == 3
        assert hms.stats()["token_requests"] == 1, hms.stats()
        # The restarted node's own account (/ready): it asked for nothing and adopted the stored token.
        ready = requests.get(node_b.url("/ready"), verify=node_b.cert, timeout=10).json()
        entry = next(i for i in ready["checks"]["instances"] if i["id"] == INSTANCE_ID)["hms"]
        assert entry["accessTokenRequests"] == 0 and entry["accessTokensAdopted"] == 1, entry
    finally:
        node_a.start()
