#!/usr/bin/env python3
"""A large registry on PostgreSQL: bulk load, the first target page of a big interest, sizes and node RSS.

  bench/postgresql/run.sh registry [--devices 10000000] [--subscribers 1000000] [--topics 1000] [--walk-seconds 15]

Method:
1. A throwaway PostgreSQL 15 cluster (benchdb.BenchCluster: fsync on, shared_buffers 256 MB, max_wal_size 4 GB);
   the schema is created by the release server's own migrations (one node started on the empty database).
2. `--devices` APNs devices are loaded with COPY (benchdb.bulk_load: secondary indexes dropped and rebuilt from
   their migration definitions, triggers off during COPY), every (devices/subscribers)th device follows "bench",
   every device one of `--topics` other interests, every 5th device belongs to a user; then VACUUM ANALYZE.
3. The target page the engine reads (`pageSQL(boundedByShard:)`, taken verbatim from
   Sources/PostgreSQLStore/PostgreSQLPushStore+Targets.swift) is prepared in one psql session as the store prepares
   it (PQprepare, untyped parameters, plan_cache_mode auto: custom plans for 5 runs, then the plan cache decides)
   and executed 100 times with psql's \\timing (client-side, loopback round trip included), page size 1000
   (`engine.pageSize`): the first page (cursor 0), a page in the middle and the last page of the interest; the
   first page again with plan_cache_mode force_generic_plan and force_custom_plan; the middle page with and
   without the bound repeated on the devices side, custom and generic plans, 10 runs each, for comparison. EXPLAIN (ANALYZE, BUFFERS) once per case (bench/out).
4. pg_database_size and each table's and index's size.
5. The release server on that database (4 connections), its VmRSS idle and, during a publish to "bench" against
   the nginx sink, sampled every 250 ms for `--walk-seconds` (the publish is then cancelled), with VmHWM.
The cluster and its directory are removed at the end.
"""
import argparse
import re
import statistics
import sys
import time
import urllib.error
from pathlib import Path

import benchdb
from benchdb import ROOT, log

TARGETS_SWIFT = ROOT / "Sources/PostgreSQLStore/PostgreSQLPushStore+Targets.swift"
TARGET_SQL_SWIFT = ROOT / "Sources/StoreSQL/TargetSQL.swift"


def swift_string(source, opening):
    """The value of the Swift multi-line string literal that follows the first match of `opening`: the closing
    quotes' indentation removed from every line, backslash line continuations joined."""
    match = re.search(opening + r'\s*"""\n(.*?)\n( *)"""', source, re.S)
    body, indent = match.group(1), match.group(2)
    lines = [line[len(indent):] if line.startswith(indent) else line for line in body.split("\n")]
    return re.sub(r"\\\n", "", "\n".join(lines))


def page_sql():
    """The engine's page of an interests publish and the page of a shard (`shardPageSQL`: the same query bounded
    above by the shard's end, `$4`), both read from the one text `pageSQL(boundedByShard:)` writes."""
    source = TARGETS_SWIFT.read_text()
    columns = swift_string(TARGET_SQL_SWIFT.read_text(), r"let d = table\s*return").replace(r"\(d)", "d")
    text = swift_string(source, r"let shardBound = .*?\n\s*return").replace(r"\(targetColumns)", columns)
    bound = re.search(r'let shardBound = boundedByShard \? "(.*?)" : ""', source).group(1)
    sql, shard_sql = text.replace(r"\(shardBound)", ""), text.replace(r"\(shardBound)", bound)
    assert "\\(" not in sql and "$3" in sql and "$4" in shard_sql, sql
    return sql, shard_sql


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def time_page(cluster, database, sql, arguments, runs, plan_cache_mode="auto", explain_to=None):
    """Milliseconds of each of `runs` EXECUTEs of `sql` prepared once in one session, and the EXPLAIN text."""
    script = [f"SET plan_cache_mode = {plan_cache_mode};", f"PREPARE page AS {sql};", r"\o /dev/null",
              r"\timing on"]
    script += [f"EXECUTE page({arguments});"] * runs
    script += [r"\timing off", r"\o", f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE page({arguments});"]
    out = cluster.psql(database, input="\n".join(script) + "\n", capture_output=True).stdout
    times = [float(t) for t in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    assert len(times) == runs, out[:2000]
    plan = "\n".join(line for line in out.splitlines() if not line.startswith("Time:"))
    if explain_to:
        explain_to.write_text(plan + "\n")
    return times, plan


def report(label, times, plan):
    head = f"[page] {label}: median {statistics.median(times):.2f} ms, p99 {percentile(times, 0.99):.2f} ms, " \
           f"min {min(times):.2f} ms, max {max(times):.2f} ms over {len(times)} runs"
    execution = re.search(r"Execution Time: ([0-9.]+) ms", plan)
    buffers = re.search(r"^ *Buffers: (.*)$", plan, re.M)
    log(head + (f"; EXPLAIN ANALYZE: execution {execution.group(1)} ms" if execution else "")
        + (f", buffers {buffers.group(1)}" if buffers else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=10_000_000)
    parser.add_argument("--subscribers", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--walk-seconds", type=float, default=15.0)
    parser.add_argument("--out", default=str(ROOT / "bench/out/postgresql/registry"))
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    log(f"== PostgreSQL registry: {args.devices} devices, {args.subscribers} on one interest, {args.topics} other "
        f"interests; {benchdb.machine()}")
    cluster = benchdb.BenchCluster()
    log(f"cluster: {cluster.value('postgres', 'SELECT version()').split(' on ')[0]}, {cluster.directory}")
    sink = benchdb.Sink(out / "sink")
    database = benchdb.new_database(cluster, "registry")
    benchdb.migrate(cluster, database, out, sink)

    started = time.monotonic()
    steps = benchdb.bulk_load(cluster, database, args.devices, subscribers=args.subscribers, topics=args.topics)
    total = time.monotonic() - started
    links = args.subscribers + (args.devices if args.topics else 0)
    log(f"[load] {args.devices} devices + {links} interest links in {total:.1f} s ("
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps.items())
        + f"); {args.devices / steps['copy devices']:.0f} devices/s through COPY; {benchdb.machine()}")

    interest = cluster.value(database, "SELECT id FROM interests WHERE name = 'bench'")
    count = int(cluster.value(database, f"SELECT count(*) FROM device_interests WHERE interest_id = {interest}"))
    assert count == args.subscribers, count
    page_size = 1000
    cursors = {
        "first page": 0,
        "middle page": int(cluster.value(database, f"SELECT device_id FROM device_interests WHERE interest_id = "
                                         f"{interest} ORDER BY device_id OFFSET {count // 2} LIMIT 1")),
        "last page": int(cluster.value(database, f"SELECT device_id FROM device_interests WHERE interest_id = "
                                       f"{interest} ORDER BY device_id OFFSET {max(0, count - page_size // 2)} LIMIT 1")),
    }
    sql, shard_sql = page_sql()
    (out / "page.sql").write_text(sql + "\n")
    log(f"[page] the engine's interestPageSQL (bench/out/.../page.sql), page size {page_size}, interest of "
        f"{count} subscribers; {benchdb.machine()}")
    for label, cursor in cursors.items():
        arguments = f"'{{{interest}}}', {cursor}, {page_size + 1}"
        name = label.replace(" ", "-")
        times, plan = time_page(cluster, database, sql, arguments, args.runs, explain_to=out / f"explain-{name}.txt")
        if label == "first page":
            report(f"{label}, runs 1-5 (custom plans)", times[:5], "")
            report(f"{label}, runs 6-{args.runs} (plan cache)", times[5:], plan)
            first_plan = plan
        report(f"{label} (cursor {cursor}), all runs", times, plan)
    for mode in ("force_generic_plan", "force_custom_plan"):
        times, plan = time_page(cluster, database, sql, f"'{{{interest}}}', 0, {page_size + 1}", args.runs, mode,
                                explain_to=out / f"explain-first-page-{mode}.txt")
        report(f"first page, plan_cache_mode {mode}", times, plan)
    if shard_sql:
        # The first shard of a split publish: followers up to the shard's end (shardSize, default 10,000).
        shard_end = int(cluster.value(database, f"SELECT device_id FROM device_interests WHERE interest_id = "
                                      f"{interest} ORDER BY device_id OFFSET {min(count, 10_000) - 1} LIMIT 1"))
        (out / "shard-page.sql").write_text(shard_sql + "\n")
        times, plan = time_page(cluster, database, shard_sql, f"'{{{interest}}}', 0, {page_size + 1}, {shard_end}",
                                args.runs, explain_to=out / "explain-first-shard-page.txt")
        report(f"first page of the first shard (shardPageSQL, shard end {shard_end})", times, plan)
    unbounded = sql.replace(" AND d.id > $2 AND d.id <= (SELECT max(device_id) FROM candidates)", "")
    assert unbounded != sql
    # The bound matters to custom plans (the first five executions on every connection), which may merge-join
    # devices from its first row; the generic plan probes devices_pkey per candidate either way.
    middle = f"'{{{interest}}}', {cursors['middle page']}, {page_size + 1}"
    for mode in ("force_custom_plan", "force_generic_plan"):
        for variant, text in (("with", sql), ("WITHOUT", unbounded)):
            times, plan = time_page(cluster, database, text, middle, 10, mode,
                                    explain_to=out / f"explain-middle-page-{variant.lower()}-devices-bound-{mode}.txt")
            join = re.search(r"(Merge|Nested Loop|Hash)( Left)? Join", plan)
            report(f"middle page {variant} the bound repeated on devices, {mode} ({join.group(0) if join else '?'})",
                   times, plan)
    log(f"[page] EXPLAIN (ANALYZE, BUFFERS) of the first page, plan cache mode auto, after {args.runs} runs:")
    for line in first_plan.splitlines():
        log("    " + line)

    log(f"[size] database {int(cluster.value(database, 'SELECT pg_database_size(current_database())')) / 2**20:.0f} MiB")
    for name, kind, size in cluster.rows(database, """
            SELECT c.relname, c.relkind, pg_relation_size(c.oid) FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') AND pg_relation_size(c.oid) > 1048576
            ORDER BY pg_relation_size(c.oid) DESC"""):
        log(f"[size]   {'table' if kind == 'r' else 'index'} {name}: {int(size) / 2**20:.0f} MiB")

    node = benchdb.Node(out / "node", benchdb.storage_postgresql(cluster, database), sink)
    time.sleep(2)
    idle, _ = benchdb.memory_kib(node.pid)
    publish_id = node.publish("bench")
    started = time.monotonic()
    peak, samples = idle, 0
    status = node.status(publish_id)
    while time.monotonic() - started < args.walk_seconds:
        rss, _ = benchdb.memory_kib(node.pid)
        peak, samples = max(peak, rss), samples + 1
        status = node.status(publish_id)
        if status["status"] == "finished":
            break
        time.sleep(0.25)
    walked = time.monotonic() - started
    answers = node.answers()
    rss, hwm = benchdb.memory_kib(node.pid)
    if status["status"] != "finished":
        try:
            node.cancel(publish_id)
        except urllib.error.HTTPError as error:
            if error.code != 409:  # 409: it finished since the last status read
                raise
    log(f"[rss] node on PostgreSQL, {args.devices} devices: idle {idle / 1024:.1f} MiB; during the publish to "
        f"{count} devices ({samples} samples over {walked:.1f} s, {answers} APNs answers = {answers / walked:.0f}/s): "
        f"max {peak / 1024:.1f} MiB, now {rss / 1024:.1f} MiB, VmHWM {hwm / 1024:.1f} MiB; status {status['status']}; "
        f"{benchdb.machine()}")
    node.stop()


if __name__ == "__main__":
    sys.exit(main())
