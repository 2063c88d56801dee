"""Exactly once under a mixed workload (Tests/sdk/mixed.py): a fan-out split into shards, small publishes to an
overlapping set of devices through every node, registrations and interest changes, all at the same time.

On PostgreSQL (`PUSH_TEST_STORE=postgresql`) two nodes share one database of the run's throwaway cluster, with
`storage.postgresql.shardSize` small enough that the fan-out becomes several shards both nodes claim; on SQLite (the
default) one node takes the same load (a SQLite file has one node: its file lock). Every device must get each
publish exactly once (the strict mock counts answers per device token), no transaction may deadlock (the
PostgreSQL server's log) and no node may lose a lease, reclaim its own run or fail a checkpoint (the nodes' logs).

Why (issue #24): each checkpoint updated its devices' rows in the order the answers arrived, inside group
transactions shared with other writes and with lease renewals; two nodes writing the same devices deadlocked,
renewals waited behind the lock waits, leases ran out while the runs were still sending, and other runs sent the
same devices again."""
import os
import sys

import pytest

from crash import LEASE_SECONDS
from harness import LOAD_TEST_LIMITS, ROOT
from mixed import DatabaseLog, mixed_trial

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import postgresql_cluster  # noqa: E402

ON_POSTGRESQL = os.environ.get("PUSH_TEST_STORE", "sqlite") == "postgresql"
if ON_POSTGRESQL and not postgresql_cluster.installed() and os.environ.get("CI") != "true":
    pytest.skip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure",
                allow_module_level=True)

# 2,400 devices in shards of 300: eight shards for two nodes; 60 of the devices also get 20 small publishes a second
# through each node for 3 s. The mock answers after 50-200 ms, so several small publishes run at once on each node
# and their checkpoints overlap (what made main deadlock) while the mock, which counts every answer in Python, keeps
# up on a loaded 2-core machine.
DEVICES, SHARD_SIZE, OVERLAP = 2400, 300, 60
SMALL_RATE, SMALL_SECONDS = 20, 3.0
DELAY_MS, JITTER_MS = 50, 150


def test_every_device_gets_each_publish_once_under_a_sharded_fanout_small_publishes_and_registrations(environment):
    mock = environment.mock()
    overrides = {"engine": {"leaseSeconds": LEASE_SECONDS}, "limits": LOAD_TEST_LIMITS,
                 "apns": {"connectionsPerPool": 2, "streamsPerConnection": 100}}
    database_log = None
    names = ["mixed"]
    if ON_POSTGRESQL:
        overrides["storage"] = postgresql_cluster.storage_section("mixed", shardSize=SHARD_SIZE)
        database_log = DatabaseLog(postgresql_cluster.shared())
        names = ["mixed-a", "mixed-b"]
    nodes = [environment.server(mock, overrides, name=name) for name in names]

    result = mixed_trial(nodes, mock, database_log, devices=DEVICES, overlap=OVERLAP, small_rate=SMALL_RATE,
                         small_seconds=SMALL_SECONDS, delay_ms=DELAY_MS, jitter_ms=JITTER_MS, finish_timeout=60)

    faults = result["lease_lost"] + result["reclaimed"] + result["checkpoint_failed"]
    assert (result["duplicates"], result["missing"]) == (0, 0), (
        f"{result['duplicates']} duplicate and {result['missing']} missing notifications over "
        f"{result['wrong_devices']} devices ({result['small_publishes']} small publishes); "
        f"deadlocks: {len(result['deadlocks'])}; node faults: {faults[:3]}")
    assert not result["deadlocks"], result["deadlocks"][:3]
    assert not faults, faults[:3]
    big = result["big"]
    assert big["status"] == "finished" and big["targets"] == DEVICES and big["apns"]["accepted"] == DEVICES, big
    assert result["small_publishes"] == int(SMALL_RATE * SMALL_SECONDS) * len(nodes)
    for status in result["small"]:
        assert status["status"] == "finished" and status["apns"]["accepted"] == OVERLAP, status
