"""The mixed workload of issue #24: a fan-out split into shards, small publishes to an overlapping set of devices
through every node, and registrations and interest changes, all at the same time; then what every device got.

Used by test_mixed_workload.py (small, in `make test`) and bench/postgresql/mixed.py (larger, one node vs two).

Method: `devices` devices register on one interest (the fan-out's) through the first node; the last `overlap` of
them also follow a second interest. The mock answers after `delay_ms` plus up to `jitter_ms` (answers overtake each
other, as Apple's do). The fan-out is published through the last node; at once every node also gets `small_rate`
small publishes per second to the second interest for `small_seconds`, while per node a client registers new
devices (on interests nobody publishes to), registers overlap devices again and makes them follow and drop another
interest: device rows and interest rows change under the running publishes, their targets do not. When every
publish finished, the mock's per-token counts must be exactly 1 for a fan-out-only device and 1 + the number of
small publishes for an overlap device.
"""
import os
import threading
import time
import uuid

import requests

from beams import Beams
from bulk import register_devices
from harness import INSTANCE_ID

# Log lines of a node that must never appear under this load.
NODE_FAULTS = {"lease_lost": "lease lost", "reclaimed": "Reclaimed a publish",
               "checkpoint_failed": "Checkpoint failed"}


class DatabaseLog:
    """The PostgreSQL server's log from now on (`cluster.directory`/log, where postgresql_cluster.py writes it)."""

    def __init__(self, cluster):
        self.path = os.path.join(cluster.directory, "log")
        self.offset = os.path.getsize(self.path)

    def text(self):
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            return log.read().decode(errors="replace")


# Seconds a request may take: a node whose store threads wait for locks answers late, which the trial reports
# (`slowest_request`) instead of failing on a client timeout.
REQUEST_TIMEOUT = 120


def _device_api(server, path, method="PUT", body=None):
    r = requests.request(method, server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns{path}"), json=body,
                         verify=server.cert, timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200, r.text


def _register(server, token, interests=()):
    r = requests.post(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                      json={"token": token, "bundleIdentifier": "com.example.sdktest"}, verify=server.cert,
                      timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200, r.text
    if interests:
        _device_api(server, f"/{r.json()['id']}/interests", body={"interests": list(interests)})


def mixed_trial(nodes, mock, database_log=None, devices=2400, overlap=80, small_rate=15, small_seconds=3.0,
                delay_ms=2, jitter_ms=20, finish_timeout=120, log=lambda line: None):
    """Runs the workload once against running `nodes` (sharing one store) and their `mock`. - Returns: a dict of
    what happened: `duplicates` and `missing` notifications, `wrong_devices`, `small_publishes`, `deadlocks` (lines
    of the database log), `lease_lost`/`reclaimed`/`checkpoint_failed` (lines of the nodes' logs), `seconds` (the
    fan-out's POST to the last publish finished), `slowest_request` (seconds, of the requests made meanwhile), the
    fan-out's (`big`) and the small publishes' (`small`) statuses."""
    big, small = f"mixed-big-{uuid.uuid4().hex[:6]}", f"mixed-small-{uuid.uuid4().hex[:6]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(devices)]
    ids, seconds = register_devices(nodes[0], INSTANCE_ID, tokens, big, concurrency=16)
    log(f"registered {devices} devices in {seconds:.1f} s")
    overlapping = list(zip(tokens[-overlap:], ids[-overlap:]))
    for index, (_, device_id) in enumerate(overlapping):
        _device_api(nodes[index % len(nodes)], f"/{device_id}/interests", body={"interests": [big, small]})
    mock.configure(record=False, delay_ms=delay_ms, delay_jitter_ms=jitter_ms)
    before = mock.stats()["per_token"]
    log_offsets = [node.log_path.stat().st_size for node in nodes]

    clients = [Beams(node) for node in nodes]
    started = time.monotonic()
    big_id = clients[-1].publish("interests", {"interests": [big], "apns": {"aps": {"alert": "big"}}})
    small_ids, errors = [], []
    stop = threading.Event()

    slowest = [0.0]

    def timed(call, *arguments, **keywords):
        began = time.monotonic()
        try:
            return call(*arguments, **keywords)
        finally:
            slowest[0] = max(slowest[0], time.monotonic() - began)

    def small_publishes(client):
        try:
            first = time.monotonic()
            for n in range(int(small_rate * small_seconds)):
                time.sleep(max(0.0, first + n / small_rate - time.monotonic()))
                r = timed(client.session.post,
                          client.server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests"),
                          json={"interests": [small], "apns": {"aps": {"alert": f"small {n}"}}},
                          headers={"Authorization": f"Bearer {client.secret}"}, timeout=REQUEST_TIMEOUT)
                assert r.status_code == 200, r.text
                small_ids.append((client, r.json()["publishId"]))
        except Exception as error:  # noqa: BLE001  (reported by the caller's thread)
            errors.append(error)

    def registrations_and_interest_changes(node, offset):
        try:
            n = 0
            while not stop.is_set():
                timed(_register, node, uuid.uuid4().hex + uuid.uuid4().hex, [f"mixed-quiet-{n % 7}"])
                token, device_id = overlapping[(offset + n) % overlap]
                timed(_register, node, token)  # an app registering again at launch: the same device, its row updated
                extra = f"mixed-extra-{n % 3}"
                timed(_device_api, node, f"/{device_id}/interests/{extra}", method="POST")
                timed(_device_api, node, f"/{device_id}/interests/{extra}", method="DELETE")
                n += 1
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    publishers = [threading.Thread(target=small_publishes, args=(client,)) for client in clients]
    changers = [threading.Thread(target=registrations_and_interest_changes, args=(node, 7 * i))
                for i, node in enumerate(nodes)]
    for thread in publishers + changers:
        thread.start()
    try:
        for thread in publishers:
            thread.join()
    finally:
        stop.set()
        for thread in publishers + changers:
            thread.join()
    assert not errors, errors

    deadline = time.monotonic() + finish_timeout

    def finished(client, publish_id):
        while True:
            r = timed(client.session.get,
                      client.server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/{publish_id}"),
                      headers={"Authorization": f"Bearer {client.secret}"}, timeout=REQUEST_TIMEOUT)
            assert r.status_code == 200, r.text
            status = r.json()
            if status["status"] not in ("queued", "running", "cancelling") or time.monotonic() > deadline:
                return status
            time.sleep(0.05)

    big_status = finished(clients[0], big_id)
    small_statuses = [finished(client, publish_id) for client, publish_id in small_ids]
    seconds = time.monotonic() - started
    after = mock.stats()["per_token"]

    def accepted(token):
        return after.get(token, {}).get("200", 0) - before.get(token, {}).get("200", 0)

    expected = {token: 1 for token in tokens[:-overlap]} | {token: 1 + len(small_ids) for token, _ in overlapping}
    wrong = {token: accepted(token) - expected[token] for token in tokens if accepted(token) != expected[token]}
    lines = []
    for node, offset in zip(nodes, log_offsets):
        with open(node.log_path, "rb") as node_log:
            node_log.seek(offset)
            lines += node_log.read().decode(errors="replace").splitlines()
    result = {
        "duplicates": sum(d for d in wrong.values() if d > 0), "missing": -sum(d for d in wrong.values() if d < 0),
        "wrong_devices": len(wrong), "small_publishes": len(small_ids), "seconds": seconds,
        "slowest_request": slowest[0],
        "deadlocks": [line for line in (database_log.text() if database_log else "").splitlines()
                      if "deadlock detected" in line],
        "big": big_status, "small": small_statuses,
    }
    for key, needle in NODE_FAULTS.items():
        result[key] = [line for line in lines if needle in line]
    return result
