"""Run-time instances on two nodes sharing one PostgreSQL database: an instance created through node A serves
devices and publishes (to the strict APNs mock) on node B within about a second (NOTIFY from A's transaction wakes
B, which reads the set's version), a quota change through B applies on A as fast, and a deletion through A answers
404 on B. Real server processes on the test run's throwaway PostgreSQL cluster."""
import json
import time
import uuid

import pytest
import requests

from beams import PROPAGATION_LIMIT_S, Beams, alert, propagated, random_token, unique, wait_for
from harness import E2E_LIMITS, KEY_ID, TEAM_ID, TOPIC, postgresql_cluster_or_skip_module
from platform_mocks import MockFCM
from test_publish_platforms import fcm_token

postgresql_cluster = postgresql_cluster_or_skip_module()

ADMIN_KEY = "admin-key-for-run-time-instances-nodes-0123456789"
SERVER = "/admin_api/v1/server"


@pytest.fixture(scope="module")
def nodes(environment):
    storage = postgresql_cluster.storage_section("runtime_instances_nodes")
    overrides = {"storage": storage, "keys": {"encryptionKey": "nodes-instances-encryption-key-0123456789abcdef"},
                 "admin": {"keys": [{"id": "ops", "key": ADMIN_KEY}]},
                 "limits": {**E2E_LIMITS, "authFailuresPerIP": 0}}
    mock = environment.mock()
    return (environment, mock, environment.server(mock, overrides, name="instances-a"),
            environment.server(mock, overrides, name="instances-b"))


def admin(server, method, path, **kwargs):
    return requests.request(method, server.url(path), headers={"Authorization": f"Bearer {ADMIN_KEY}"},
                            verify=server.cert, timeout=10, **kwargs)


def register_status(server, instance_id):
    return requests.post(server.url(f"/device_api/v1/instances/{instance_id}/devices/apns"),
                         json={"token": random_token(), "bundleIdentifier": TOPIC}, verify=server.cert,
                         timeout=10).status_code


def metric(server, name):
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return next((float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " ")), None)


def fcm_sent(server):
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("push_notifications_total{") and 'platform="fcm"' in line and 'status="200"' in line)


def test_an_instance_created_on_one_node_serves_publishes_on_the_other_and_its_deletion_too(nodes):
    environment, mock, node_a, node_b = nodes
    instance_id, secret = str(uuid.uuid4()), "nodes-runtime-secret-" + uuid.uuid4().hex
    body = {"id": instance_id, "secretKey": secret,
            "apns": {"teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(environment.p8), "topic": TOPIC,
                     "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{mock.port}",
                     "caFile": mock.ca_file}}
    assert register_status(node_b, instance_id) == 404
    r = admin(node_a, "POST", f"{SERVER}/instances", json=body)
    assert r.status_code == 201, r.text
    propagated("instance created on A served by B", lambda: register_status(node_b, instance_id) == 200,
               interval=0.02)

    client = Beams(node_b, instance_id, secret)
    token, interest = random_token(), unique("nodes")
    client.register(token, [interest])
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("from node b")})
    assert client.wait_finished(publish_id)["apns"]["accepted"] == 1
    assert len(mock.requests_for(token)) == 1

    # A quota change through B applies on A without a restart.
    r = admin(node_b, "PATCH", f"{SERVER}/instances/{instance_id}", json={"quotas": {"devices": 2}})
    assert r.status_code == 200, r.text
    propagated("quota changed on B applied on A", lambda: register_status(node_a, instance_id) == 400,
               interval=0.02)

    assert admin(node_a, "DELETE", f"{SERVER}/instances/{instance_id}").status_code == 200
    body = {"interests": [interest], "apns": alert("x")}
    propagated("instance deleted on A refused by B",
               lambda: client.publish_raw("/interests", body).status_code == 404, interval=0.02)
    versions = [metric(node, "push_instances_version") for node in (node_a, node_b)]
    assert versions[0] == versions[1] and versions[0] >= 3, versions
    entries = admin(node_b, "GET", f"{SERVER}/audit").json()["entries"]
    actions = [(e["action"], e["actor"]) for e in entries if e["target"] == instance_id]
    assert actions == [("instance.create", "admin:ops"), ("instance.update", "admin:ops"),
                       ("instance.delete", "admin:ops")], actions


def test_changes_to_an_instance_while_both_nodes_send_its_publishes_deliver_each_device_exactly_once(environment):
    """Run-time changes under load: two publishes of a stored FCM instance, split into shards that both nodes
    claim, go out to a slow FCM (6 s per answer, longer than
    the 5 s a retired sender gets once no run holds it) while the instance is changed three times through alternating
    nodes. Each change retires the instance's FCM sender on every node; the runs holding it finish on it and the
    next shards take the new one. Every device gets exactly one message per publish, both publishes finish, and
    each change is one version step on both nodes."""
    storage = postgresql_cluster.storage_section("runtime_instances_load", shardSize=100)
    overrides = {"storage": storage, "keys": {"encryptionKey": "load-instances-encryption-key-0123456789abcdef"},
                 "admin": {"keys": [{"id": "ops", "key": ADMIN_KEY}]},
                 "limits": {**E2E_LIMITS, "authFailuresPerIP": 0}}
    mock = environment.mock()
    node_a = environment.server(mock, overrides, name="load-a")
    node_b = environment.server(mock, overrides, name="load-b")
    fcm = MockFCM(environment.directory)
    environment.processes.append(fcm)

    instance_id, secret = str(uuid.uuid4()), "load-runtime-secret-" + uuid.uuid4().hex
    r = admin(node_a, "POST", f"{SERVER}/instances", json={"id": instance_id, "secretKey": secret, "fcm": fcm.config()})
    assert r.status_code == 201, r.text
    count, interest = 300, unique("load")
    tokens = [fcm_token() for _ in range(count)]
    lines = [json.dumps({"format": "push-server-devices", "version": 1})]
    lines += [json.dumps({"platform": "fcm", "token": token, "interests": [interest]}) for token in tokens]
    r = requests.post(node_a.url(f"/admin_api/v1/instances/{instance_id}/devices/import"), data="\n".join(lines),
                      headers={"Authorization": f"Bearer {secret}"}, verify=node_a.cert, timeout=60)
    assert r.status_code == 200 and r.json()["created"] == count, r.text
    clients = [Beams(node_a, instance_id, secret), Beams(node_b, instance_id, secret)]
    wait_for(lambda: clients[1].publish_raw("/interests", {}).status_code != 404, timeout=PROPAGATION_LIMIT_S + 2,
             interval=0.02, message="the instance never reached node B")

    fcm.configure(send_latency_ms=6000)
    publish_ids = [client.publish("interests", {"interests": [interest],
                                                "fcm": {"notification": {"title": f"load {n}"}}})
                   for n, client in enumerate(clients)]
    version = metric(node_a, "push_instances_version")
    changed_while_running = 0
    for step, node in enumerate([node_b, node_a, node_b]):
        time.sleep(1.5)
        running = any(clients[0].status(p)["status"] in ("queued", "running") for p in publish_ids)
        r = admin(node, "PATCH", f"{SERVER}/instances/{instance_id}", json={"publishWeight": step + 2})
        assert r.status_code == 200, r.text
        changed_while_running += running
    statuses = [clients[0].wait_finished(publish_id, timeout=180) for publish_id in publish_ids]
    fcm.configure(send_latency_ms=0)
    assert [s["fcm"]["accepted"] for s in statuses] == [count, count], statuses

    sent = {}
    for record in fcm.requests():
        if record["status"] == 200:
            title = record["message"]["notification"]["title"]
            sent[(record["token"], title)] = sent.get((record["token"], title), 0) + 1
    for n in range(2):
        per_device = [sent.get((token, f"load {n}"), 0) for token in tokens]
        assert per_device == [1] * count, f"publish {n}: {count - per_device.count(1)} devices not exactly once"
    sent_by = [fcm_sent(node) for node in (node_a, node_b)]
    print(f"changes while publishes ran: {changed_while_running} of 3; FCM notifications sent by node: {sent_by}")
    assert changed_while_running >= 2, "the changes must come while the publishes are being sent"
    assert all(sent_by), "both nodes send shards of the publishes"
    wait_for(lambda: [metric(node, "push_instances_version") for node in (node_a, node_b)] == [version + 3] * 2,
             timeout=PROPAGATION_LIMIT_S + 2, message="each change is one version step on both nodes")
