#!/usr/bin/env python3
"""Fan-out on PostgreSQL: one node vs SQLite, two nodes vs one, and kill -9 of one of two nodes.

  bench/postgresql/run.sh nodes [--devices 1000000] [--kill-devices 200000] [--window-devices 100000]
                                [--scenarios sqlite,two-nodes,window,kill9]

Method (every server is the release `push-server serve`, its instance's APNs endpoint the nginx HTTP/2 sink of the
publish benchmarks, bench/apns/nginx-sink.sh: headers-only 200, no delay unless --delay-ms; one publish to the
interest "bench" POSTed, its status polled every 50 ms until `finished`):
- sqlite: `--devices` devices on one interest in PostgreSQL (COPY, benchdb.bulk_load) and in SQLite (SeedDevices,
  the store's API); one node on each, the same sink, one after the other (`--rounds` times). Rate = devices /
  (POST → finished); the node's CPU (utime+stime, /proc/PID/stat) per notification; on PostgreSQL also the
  database processes' CPU per notification (SQLite's work is inside the node). Target: PostgreSQL ≥ 0.7× SQLite.
- two-nodes: on the same PostgreSQL database, the publish with one node running, then with two (a second node on
  the same database and sink; the publish POSTed to the first). Each node's APNs answers (its /metrics) and CPU
  over the publish: on 2 cores the stable figure is CPU per notification per node, not the rate.
- window: two nodes vs one where the CPU allows it: each node's APNs window is 1 connection × 100 streams (server
  `apns` settings) and the sink answers after --window-delay-ms (50 ms, a round trip to Apple), so one node sends
  at most 2,000/s, a small part of a core; `--window-devices` devices, one node, then two. Target ≥ 1.6×.
- kill9: `--kill-devices` devices, two nodes (engine.leaseSeconds 5, apns 4 connections × 250 streams = an
  in-flight window of 1,000), the sink logging each request's path; when the nodes together have 40 % of the
  answers the node with the most is killed (-9); the survivor's answers and the publish status are followed to the
  end (`--rounds` times, each on a fresh database). From the sink's log: devices never sent (missing, must be 0)
  and sends beyond one per device (duplicates). Their bound is what the dead node had sent without a durable
  record: its in-flight window plus one checkpoint interval (200 ms) of answers at the measured rate; the engine's
  hard bound (window + 10,000 unwritten answers per run, where its sending pauses) is checked too.
Before each PostgreSQL publish `VACUUM ANALYZE devices` (untimed) clears what the previous publish updated.
A publish larger than `storage.postgresql.shardSize` (10,000) is split into shards that every node claims
(docs/OPERATIONS.md, "PostgreSQL backend"); the script prints what each node sent.
"""
import argparse
import collections
import os
import subprocess
import sys
import time
from pathlib import Path

import benchdb
from benchdb import ROOT, log

LEASE_SECONDS = 5
CONNECTIONS, STREAMS = 4, 250
CHECKPOINT_INTERVAL_S = 0.2
# The window-bound two-node run: a node's APNs window, small enough that window / sink delay is far below what a
# node's CPU can send on this machine.
WINDOW_CONNECTIONS, WINDOW_STREAMS = 1, 100
# PublishEngine.Settings.maxUncheckpointedResults: sending pauses while this many answers wait for a checkpoint, so
# a dying node can have sent at most its in-flight window plus this many per run (publish or shard) it had without a
# durable record (the hard bound; printed for one run).
MAX_UNWRITTEN_ANSWERS = 10_000


def seed_binary():
    return os.environ.get("SEED_BIN", str(ROOT / ".build/release/SeedDevices"))


def wal_lsn(cluster):
    return cluster.value("postgres", "SELECT pg_current_wal_lsn()")


def wal_bytes(cluster, since):
    return int(float(cluster.value("postgres", f"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{since}')")))


def device_updates(cluster, database):
    """Rows of `devices` updated so far (and how many of them HOT), from the statistics a backend flushes when it
    ends or idles: read it after the nodes stopped."""
    return [int(v) for v in cluster.rows(
        database, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'devices'")[0]]


def fanout(entry, nodes, devices, cluster=None, label=""):
    """One publish to "bench" through `entry` while `nodes` run; returns and prints its numbers."""
    timeout = max(300, devices / 500)
    cpu0 = [benchdb.cpu_seconds(node.pid) for node in nodes]
    answers0 = [node.answers() for node in nodes]
    db0 = benchdb.postgres_cpu_seconds(cluster) if cluster else 0.0
    lsn0 = wal_lsn(cluster) if cluster else None
    load = benchdb.load_average()
    started = time.monotonic()
    publish_id = entry.publish("bench")
    status = benchdb.wait_finished(entry, publish_id, timeout)
    wall = time.monotonic() - started
    cpu = [benchdb.cpu_seconds(node.pid) - c for node, c in zip(nodes, cpu0)]
    answers = [node.answers() - a for node, a in zip(nodes, answers0)]
    db = benchdb.postgres_cpu_seconds(cluster) - db0 if cluster else None
    wal = wal_bytes(cluster, lsn0) if cluster else None
    accepted = status["apns"]["accepted"]
    line = (f"{label}: {devices} devices, accepted {accepted}, {devices / wall:.0f} notifications/s "
            f"(wall {wall:.2f} s); nodes' CPU {sum(cpu) * 1e6 / devices:.1f} us/notification")
    if db is not None:
        line += f", database CPU {db * 1e6 / devices:.1f} us/notification, WAL {wal / devices:.0f} B/notification"
    log(line + f"; load average before {load}, after {benchdb.load_average()}")
    if len(nodes) > 1:
        for name, c, a in zip("ABCDEFGH", cpu, answers):
            per = f"{c * 1e6 / a:.1f} us CPU per notification it sent" if a else "sent none (idle CPU only)"
            log(f"    node {name}: {a} APNs answers ({100 * a / max(1, devices):.0f}%), CPU {c:.2f} s, {per}")
    if status["status"] != "finished" or accepted != devices:
        log(f"    NOT EXACT: status {status['status']}, accepted {accepted} of {devices}")
    return {"rate": devices / wall, "wall": wall, "cpu": cpu, "answers": answers, "db": db, "accepted": accepted}


def vacuum(cluster, database):
    cluster.psql(database, "-c", "VACUUM ANALYZE devices", capture_output=True)


def postgres_registry(cluster, devices, out, sink, tokens_file=None):
    database = benchdb.new_database(cluster, "nodes")
    benchdb.migrate(cluster, database, out, sink)
    started = time.monotonic()
    benchdb.bulk_load(cluster, database, devices, subscribers=devices, topics=0, tokens_file=tokens_file)
    log(f"[load] {devices} devices on \"bench\" in PostgreSQL with COPY in {time.monotonic() - started:.1f} s")
    return database


def scenario_sqlite(args, cluster, database, sink, out):
    log(f"== one node on PostgreSQL vs one node on SQLite, {args.devices} devices, sink delay {args.delay_ms} ms; "
        f"{benchdb.machine()}")
    sqlite_path = out / "sqlite" / "push.sqlite"
    sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(sqlite_path) + suffix).unlink(missing_ok=True)
    seeded = subprocess.run([seed_binary(), "--db", str(sqlite_path), "--instance", benchdb.INSTANCE,
                             "--interest", "bench", "--count", str(args.devices)],
                            check=True, capture_output=True, text=True).stdout.strip()
    log(f"[load] SQLite through SeedDevices: {seeded}")
    ratios = []
    for round_number in range(1, args.rounds + 1):
        vacuum(cluster, database)
        updated0 = device_updates(cluster, database)
        node = benchdb.Node(out / "pg-one", benchdb.storage_postgresql(cluster, database), sink)
        pg = fanout(node, [node], args.devices, cluster, f"[round {round_number}] PostgreSQL, one node")
        node.stop()
        updated = [b - a for a, b in zip(updated0, device_updates(cluster, database))]
        log(f"    devices rows updated by the publish (device health, read after the node stopped): {updated[0]} "
            f"({updated[1]} HOT)")
        node = benchdb.Node(out / "sqlite-one", {"path": str(sqlite_path)}, sink)
        lite = fanout(node, [node], args.devices, None, f"[round {round_number}] SQLite, one node")
        node.stop()
        ratios.append(pg["rate"] / lite["rate"])
        log(f"[round {round_number}] PostgreSQL / SQLite rate: {ratios[-1]:.2f}x (target >= 0.7x); CPU per "
            f"notification, node + database: PostgreSQL {(pg['cpu'][0] + pg['db']) * 1e6 / args.devices:.1f} us, "
            f"SQLite {lite['cpu'][0] * 1e6 / args.devices:.1f} us")
    return ratios


def one_then_two(cluster, database, sink, devices, out, prefix, server_apns=None):
    """The same publish with one node running, then with a second node on the same database and sink (POSTed to
    the first both times). - Returns: both `fanout` results."""
    storage = benchdb.storage_postgresql(cluster, database)
    vacuum(cluster, database)
    node_a = benchdb.Node(out / f"{prefix}a", storage, sink, server_apns=server_apns)
    one = fanout(node_a, [node_a], devices, cluster, "one node")
    vacuum(cluster, database)
    node_b = benchdb.Node(out / f"{prefix}b", storage, sink, server_apns=server_apns)
    two = fanout(node_a, [node_a, node_b], devices, cluster, "two nodes, publish POSTed to A")
    node_b.stop()
    node_a.stop()
    return one, two


def scenario_two_nodes(args, cluster, database, sink, out):
    log(f"== two nodes on one PostgreSQL vs one, {args.devices} devices; {benchdb.machine()}")
    one, two = one_then_two(cluster, database, sink, args.devices, out, "node-")
    busy = sum(1 for a in two["answers"] if a > 0)
    log(f"two nodes / one node rate: {two['rate'] / one['rate']:.2f}x (target >= 1.6x when the CPU allows it); "
        f"nodes that sent: {busy} of 2" + ("" if busy > 1 else
                                           " (the publish was not shared: was it split into shards? "
                                           "storage.postgresql.shardSize)"))
    return two["rate"] / one["rate"]


def scenario_window(args, cluster, out):
    """Two nodes vs one where the CPU is not the limit: each node's APNs window (WINDOW_CONNECTIONS ×
    WINDOW_STREAMS) against a sink that answers after --window-delay-ms bounds a node at window / delay, as Apple's
    round trip does, far below what a core can send. A second node brings a second window."""
    devices, delay = args.window_devices, args.window_delay_ms
    window = {"connectionsPerPool": WINDOW_CONNECTIONS, "streamsPerConnection": WINDOW_STREAMS}
    ceiling = WINDOW_CONNECTIONS * WINDOW_STREAMS * 1000 / max(1, delay)
    log(f"== two nodes vs one, window-bound: {devices} devices, sink delay {delay} ms, window {WINDOW_CONNECTIONS} "
        f"x {WINDOW_STREAMS} per node (at most {ceiling:.0f}/s per node); {benchdb.machine()}")
    sink = benchdb.Sink(out / "window-sink", delay)
    database = postgres_registry(cluster, devices, out, sink)
    one, two = one_then_two(cluster, database, sink, devices, out, "window-", server_apns=window)
    sink.stop()
    cluster.sql(f"DROP DATABASE {database}")
    ratio = two["rate"] / one["rate"]
    log(f"two nodes / one node rate, window-bound: {ratio:.2f}x (target >= 1.6x)")
    return ratio


def answered_refs_sql(cluster, database, sharded):
    """The statement counting the refs remembered as answered above a cursor. A build with
    `publish_answered.last_ref` stores a row per range of consecutive refs (`ref ... coalesce(last_ref, ref)`), and
    a range the cursor stands inside stays until the cursor passes its end: its refs above the cursor (of its shard,
    else of its job) are counted. A build without the column stores a row per ref, all above the cursor."""
    ranged = cluster.value(database, (
        "SELECT count(*) FROM information_schema.columns "
        "WHERE table_name = 'publish_answered' AND column_name = 'last_ref'")) == "1"
    if not ranged:
        return "SELECT count(*) FROM publish_answered"
    cursor = "(SELECT j.cursor FROM publish_jobs j WHERE j.id = a.job_id)"
    if sharded:
        cursor = ("coalesce((SELECT s.cursor FROM publish_shards s WHERE s.job_id = a.job_id AND a.ref > s.after_ref "
                  f"AND (s.through_ref IS NULL OR a.ref <= s.through_ref)), {cursor})")
    return ("SELECT coalesce(sum(greatest(0, coalesce(a.last_ref, a.ref) - greatest(a.ref - 1, c.cursor))), 0) "
            f"FROM publish_answered a CROSS JOIN LATERAL (SELECT {cursor} AS cursor) c")


def scenario_kill9(args, cluster, out):
    devices = args.kill_devices
    log(f"== kill -9 of one of two nodes at {args.stop_at:.0%} of a {devices}-device fan-out, lease "
        f"{LEASE_SECONDS} s, window {CONNECTIONS} x {STREAMS}; {benchdb.machine()}")
    access_log = out / "kill9-sink" / "access.log"
    access_log.parent.mkdir(parents=True, exist_ok=True)
    access_log.unlink(missing_ok=True)
    sink = benchdb.Sink(out / "kill9-sink", args.delay_ms, access_log=access_log)
    tokens_file = out / "kill9-tokens.txt"
    database = postgres_registry(cluster, devices, out, sink, tokens_file)
    storage = benchdb.storage_postgresql(cluster, database)
    engine = {"leaseSeconds": LEASE_SECONDS}
    window = {"connectionsPerPool": CONNECTIONS, "streamsPerConnection": STREAMS}
    nodes = [benchdb.Node(out / f"kill9-{name}", storage, sink, engine, server_apns=window) for name in "ab"]
    started = time.monotonic()
    publish_id = nodes[0].publish("bench")
    threshold = int(devices * args.stop_at)
    while True:
        answers = [node.answers() for node in nodes]
        if sum(answers) >= threshold:
            break
        if time.monotonic() - started > 300:
            raise RuntimeError("the fan-out never reached the stop point")
        time.sleep(0.005)
    victim = 0 if answers[0] >= answers[1] else 1
    survivor = nodes[1 - victim]
    nodes[victim].kill9()
    killed = time.monotonic()
    # What the victim had made durable: its last checkpoint (the cursor, every ref at or below it settled, and the
    # refs answered above it). Everything else it sent is sent again by the survivor.
    # Every device follows "bench" and ids are contiguous, so a cursor's progress is a difference of ids. A build
    # that splits publishes keeps a cursor per shard (`publish_shards`, range `(after_ref, through_ref]`); one
    # that does not, one per job. Another schema prints "n/a".
    try:
        sharded = cluster.value(database, "SELECT to_regclass('publish_shards') IS NOT NULL") == "t"
        answered = int(cluster.value(database, answered_refs_sql(cluster, database, sharded)))
        shards, progress = (int(v) for v in cluster.rows(database, (
            "SELECT count(*), coalesce(sum(greatest(0, cursor - after_ref)), 0) FROM publish_shards") if sharded
            else "SELECT 0, 0")[0])
        if shards == 0:
            cursor = int(cluster.value(database, "SELECT cursor FROM publish_jobs"))
            progress = max(0, cursor - int(cluster.value(database, "SELECT min(id) FROM devices")) + 1)
        checkpointed = progress + answered
        # Read after the kill: with shards the survivor's checkpoints go on meanwhile, so this is an upper bound of
        # what was durable at the kill.
        durable = (f"checkpoints read just after the kill ({shards or 'no'} shards) covered {checkpointed} devices "
                   f"({answered} of them answered above a cursor)")
    except (subprocess.CalledProcessError, ValueError, IndexError):
        durable = "checkpoints: n/a (schema not known to this script)"
    log(f"kill -9 node {'AB'[victim]} after {killed - started:.2f} s, answers A {answers[0]} / B {answers[1]} "
        f"({100 * sum(answers) / devices:.0f}%); {durable}")
    at_kill = survivor.answers()
    takeover = None
    while True:
        status = survivor.status(publish_id)
        if takeover is None and survivor.answers() > at_kill:
            takeover = time.monotonic() - killed
        if status["status"] not in ("queued", "running", "cancelling"):
            break
        if time.monotonic() - killed > max(300, devices / 200):
            raise RuntimeError("the survivor did not finish the publish")
        time.sleep(0.05)
    finished = time.monotonic() - killed
    survivor_sent = survivor.answers() - at_kill
    for node in nodes:
        node.stop()
    sink.stop()  # flushes the access log
    counts, other = collections.Counter(), collections.Counter()
    with open(access_log) as lines:
        for line in lines:
            path, code = line.split()
            token = path.rsplit("/", 1)[-1]
            (counts if code == "200" else other)[token] += 1
    tokens = tokens_file.read_text().split()
    missing = sum(1 for token in tokens if counts[token] == 0)
    duplicates = sum(max(0, counts[token] - 1) for token in tokens)
    rate = sum(answers) / max(killed - started, 1e-3)
    bound = CONNECTIONS * STREAMS + rate * CHECKPOINT_INTERVAL_S
    exact = status["status"] == "finished" and status["targets"] == devices and status["apns"]["accepted"] == devices
    log(f"survivor {'AB'[1 - victim]}: first send {takeover if takeover is None else round(takeover, 2)} s after the "
        f"kill, publish {status['status']} {finished:.2f} s after the kill (attempt {status.get('attempts')}), it sent "
        f"{survivor_sent} after the kill")
    log(f"missing devices: {missing} (must be 0); duplicate sends: {duplicates} (bound: window {CONNECTIONS * STREAMS} "
        f"+ one checkpoint interval at {rate:.0f}/s = {bound:.0f}); requests the sink answered other than 200: "
        f"{sum(other.values())}; publish counts exact: {exact}; {benchdb.machine()}")
    hard_bound = CONNECTIONS * STREAMS + MAX_UNWRITTEN_ANSWERS
    log("duplicates within the bound" if duplicates <= bound else "DUPLICATES ABOVE THE BOUND (checkpoints lagged)")
    log(f"engine's hard bound for one run (window + {MAX_UNWRITTEN_ANSWERS} unwritten answers, where its sending pauses): "
        f"{hard_bound}: "
        + ("held" if duplicates <= hard_bound else "EXCEEDED"))
    return missing == 0 and exact


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--kill-devices", type=int, default=200_000)
    parser.add_argument("--scenarios", default="sqlite,two-nodes,window,kill9")
    parser.add_argument("--window-devices", type=int, default=100_000)
    parser.add_argument("--window-delay-ms", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--stop-at", type=float, default=0.4)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "bench/out/postgresql/nodes"))
    args = parser.parse_args()
    scenarios = set(args.scenarios.split(","))
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cluster = benchdb.BenchCluster()
    log(f"cluster: {cluster.value('postgres', 'SELECT version()').split(' on ')[0]}; {benchdb.machine()}")
    ok = True
    if scenarios & {"sqlite", "two-nodes"}:
        sink = benchdb.Sink(out / "sink", args.delay_ms)
        database = postgres_registry(cluster, args.devices, out, sink)
        if "sqlite" in scenarios:
            scenario_sqlite(args, cluster, database, sink, out)
        if "two-nodes" in scenarios:
            scenario_two_nodes(args, cluster, database, sink, out)
        sink.stop()
        cluster.sql(f"DROP DATABASE {database}")
    if "window" in scenarios:
        scenario_window(args, cluster, out)
    if "kill9" in scenarios:
        for round_number in range(1, args.rounds + 1):
            if args.rounds > 1:
                log(f"[kill -9 round {round_number} of {args.rounds}]")
            ok = scenario_kill9(args, cluster, out) and ok
        log("OK: every device was sent once at least, publish counts exact" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
