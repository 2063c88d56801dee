#!/usr/bin/env python3
"""Exactly once under a mixed workload on PostgreSQL: one node vs two on one database.

  bench/postgresql/run.sh mixed [--devices 3000] [--shard-size 300] [--overlap 100] [--small-rate 25]
                                [--small-seconds 5] [--nodes 1,2] [--rounds 1]

Method (Tests/sdk/mixed.py, the load of the mixed-workload test at a larger size): release push-server nodes over
TLS against the strict mock APNs (Tests/Support/mock_apns.py, per-token counts; answers after 2 ms plus up to 20 ms,
so they overtake each other), on a fresh database of a throwaway PostgreSQL 15 cluster with durable settings
(benchdb.BenchCluster), `storage.postgresql.shardSize` = --shard-size, engine.leaseSeconds 5. --devices devices on
one interest; the last --overlap of them follow a second one. One fan-out to the first interest through the last
node, and at the same time --small-rate small publishes per second through each node to the second interest for
--small-seconds, while a client per node registers new devices, registers overlap devices again and has them follow
and drop another interest. Printed per run: duplicate and missing notifications (the mock's per-token counts against
1 per publish), deadlocks ("deadlock detected" in the database log), leases lost, own runs reclaimed and failed
checkpoints (the nodes' logs), and the time from the fan-out's POST until every publish finished. Exits 1 when any
run had a duplicate, a missing notification, a deadlock or a lease lost.
"""
import argparse
import sys
import tempfile
from pathlib import Path

import benchdb
from benchdb import ROOT, log

sys.path.insert(0, str(ROOT / "Tests" / "sdk"))
from harness import LOAD_TEST_LIMITS, Environment  # noqa: E402
from mixed import DatabaseLog, mixed_trial  # noqa: E402


def run(args, cluster, environment, node_count, round_number):
    database = benchdb.new_database(cluster, f"mixed{node_count}")
    mock = environment.mock()
    overrides = {"engine": {"leaseSeconds": args.lease_seconds}, "limits": LOAD_TEST_LIMITS,
                 "log": {"level": "info"},
                 "storage": {"backend": "postgresql", "postgresql": {
                     "connectionString": cluster.connection_string(database), "shardSize": args.shard_size}}}
    nodes = [environment.server(mock, overrides, name=f"n{node_count}-r{round_number}-{i}") for i in range(node_count)]
    try:
        result = mixed_trial(nodes, mock, DatabaseLog(cluster), devices=args.devices, overlap=args.overlap,
                             small_rate=args.small_rate, small_seconds=args.small_seconds,
                             finish_timeout=args.finish_timeout, log=log)
    finally:
        for node in nodes:
            node.stop()
        mock.stop()
    small = result["small"]
    unfinished = sum(1 for s in [result["big"], *small] if s["status"] != "finished")
    log(f"{node_count} node(s): {1 + len(small)} publishes, {result['duplicates']} duplicates, "
        f"{result['missing']} missing ({result['wrong_devices']} devices off), {len(result['deadlocks'])} deadlocks, "
        f"{len(result['lease_lost'])} lease lost, {len(result['reclaimed'])} reclaimed, "
        f"{len(result['checkpoint_failed'])} checkpoints failed, {unfinished} unfinished; "
        f"all finished {result['seconds']:.1f} s after the fan-out's POST")
    return not (result["duplicates"] or result["missing"] or result["deadlocks"] or result["lease_lost"] or unfinished)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=3000)
    parser.add_argument("--shard-size", type=int, default=300)
    parser.add_argument("--overlap", type=int, default=100)
    parser.add_argument("--small-rate", type=float, default=25, help="small publishes per second through each node")
    parser.add_argument("--small-seconds", type=float, default=5)
    parser.add_argument("--lease-seconds", type=int, default=5)
    parser.add_argument("--nodes", default="1,2")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--finish-timeout", type=float, default=900)
    args = parser.parse_args()
    cluster = benchdb.BenchCluster()
    log(f"cluster: {cluster.value('postgres', 'SELECT version()').split(' on ')[0]}; {benchdb.machine()}")
    log(f"load: {args.devices} devices in shards of {args.shard_size}, {args.overlap} of them also get "
        f"{args.small_rate:g} small publishes/s through each node for {args.small_seconds:g} s, registrations and "
        f"interest changes meanwhile")
    ok = True
    with tempfile.TemporaryDirectory(prefix="mixed-") as directory:
        environment = Environment(Path(directory))
        try:
            for round_number in range(1, args.rounds + 1):
                for count in (int(n) for n in args.nodes.split(",")):
                    ok = run(args, cluster, environment, count, round_number) and ok
        finally:
            environment.close()
    log("OK: every device got each publish once; no deadlock, no lease lost" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
