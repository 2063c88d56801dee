"""Keys on two nodes sharing one PostgreSQL database: a key created, or a Beams secret rolled, through node A works
on node B within about a second (each node re-reads an instance's keys at most once a second), and a revocation
through B stops the key on A as fast. Real server processes on the test run's throwaway PostgreSQL cluster."""

import pytest
import requests

from beams import propagated
from harness import E2E_LIMITS, INSTANCE_ID, SECRET, postgresql_cluster_or_skip_module

postgresql_cluster = postgresql_cluster_or_skip_module()

BASE = f"/admin_api/v1/instances/{INSTANCE_ID}"
PUBLISHES = f"/publish_api/v1/instances/{INSTANCE_ID}/publishes"


@pytest.fixture(scope="module")
def nodes(environment):
    storage = postgresql_cluster.storage_section("api_keys_nodes")
    # Polling with a key B does not know yet counts as wrong keys: the per-address lockout is off here.
    overrides = {"storage": storage, "keys": {"encryptionKey": "nodes-key-encryption-key-0123456789abcdef"},
                 "limits": {**E2E_LIMITS, "authFailuresPerIP": 0}}
    mock = environment.mock()
    return environment.server(mock, overrides, name="keys-a"), environment.server(mock, overrides, name="keys-b")


def call(server, method, path, key, **kwargs):
    return requests.request(method, server.url(path), headers={"Authorization": f"Bearer {key}"},
                            verify=server.cert, timeout=10, **kwargs)


def publish(server, key):
    return call(server, "POST", PUBLISHES, key, json={"interests": ["n"], "apns": {"aps": {"alert": "x"}}}).status_code


def test_a_key_created_on_one_node_works_on_the_other_and_its_revocation_too(nodes):
    node_a, node_b = nodes
    # Node B has read the instance's keys (its cache is warm) before A creates one.
    assert publish(node_b, SECRET) == 200
    r = call(node_a, "POST", f"{BASE}/keys", SECRET, json={"label": "multi-node", "scopes": ["publish"]})
    assert r.status_code == 201, r.text
    key, key_id = r.json()["key"], r.json()["id"]
    propagated("key created on A accepted by B", lambda: publish(node_b, key) == 200)
    assert call(node_b, "DELETE", f"{BASE}/keys/{key_id}", SECRET).status_code == 200
    propagated("key revoked on B refused by A", lambda: publish(node_a, key) == 401)


def test_a_beams_secret_rolled_on_one_node_is_accepted_on_the_other_with_the_old_one(nodes):
    node_a, node_b = nodes
    assert publish(node_b, SECRET) == 200
    r = call(node_a, "POST", f"{BASE}/beams-secret/roll", SECRET, json={"expiresIn": "1h"})
    assert r.status_code == 201, r.text
    new_secret = r.json()["secretKey"]
    propagated("Beams secret rolled on A accepted by B", lambda: publish(node_b, new_secret) == 200)
    assert publish(node_b, SECRET) == 200, "the old secret is accepted during the overlap on every node"
