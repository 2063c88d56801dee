#!/usr/bin/env python3
"""The PostgreSQL claim behind a backlog: how long one claim takes with N publishes queued, this tree's claim
statement against another revision's, alternating, on one database.

    bench/postgresql/run.sh claim [--base REV] [--queued 33000] [--finished 200000] [--instances 20] [--claims 300]
                                   [--rounds 3]

Method: a throwaway PostgreSQL 15 cluster (benchdb: fsync on), its schema created by the release server's own
migrations (SERVER_BIN, default .build/release/push-server: it must know every step the statements read, so it is
this tree's build); then `--finished` finished publishes and `--queued` queued ones spread over `--instances`
instances in id order (as one node's intake leaves them), `VACUUM ANALYZE`. The ranked claim statements are read
from the Swift sources (`PostgreSQLPushStore.claimSQL`) of this tree and of `--base` (git show), their
interpolations resolved, and run by pgbench as the store runs them (`-M prepared`: a named
prepared statement, which PostgreSQL may switch to its generic plan after five runs), each claim committed, with
the claiming node's ranking: it runs publishes of two instances (8 and 1 runs), so every claim ranks. Each round
runs `--claims` claims of each revision in turn (base first); the backlog shrinks by one job a claim, a few hundred
of tens of thousands. Printed: pgbench's latency average per round, medians and their ratio, the load average.
"""
import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import benchdb
import postgresql_cluster

SOURCE = "Sources/PostgreSQLStore/PostgreSQLPushStore+Queue.swift"
# The statement's parameters as pgbench variables (bound as parameters of the prepared statement, as the store binds
# them), and their values: now, the claiming node, the lease's end, the node's instances and their runs, "only
# absent instances" off.
PARAMETERS = {"$1": ("now", "30000"), "$2": ("worker", "bench-node"), "$3": ("expires", "9000000000000"),
              "$4": ("ids", "{i01,i02}"), "$5": ("runs", "{8,1}"), "$6": ("only", "0")}


def swift_string(source, name):
    """The text of `static let NAME = \"\"\"…\"\"\"` in `source`, its indentation removed and its `\\(other)`
    interpolations of the file's other such strings resolved."""
    match = re.search(r'static let ' + re.escape(name) + r' = """\n(.*?)\n( *)"""', source, re.S)
    if not match:
        return None
    indent = len(match.group(2))
    text = "\n".join(line[indent:] for line in match.group(1).split("\n"))
    return re.sub(r"\\\((\w+)\)", lambda m: swift_string(source, m.group(1)), text).replace("\\\\", "\\")


def statement(source, revision):
    sql = swift_string(source, "claimSQL")
    if sql is None:
        sys.exit(f"no claimSQL in {SOURCE} at {revision}")
    for key, (variable, _) in PARAMETERS.items():
        sql = sql.replace(key, f":{variable}")
    return sql


def load(cluster, database, finished, queued, instances):
    total = finished + queued
    cluster.psql(database, "-c", f"""
        INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at, state, finished_at)
        SELECT 'i' || lpad(((g * 7919) % {instances})::text, 2, '0'), 'p' || g, 'interests', ARRAY['bench'],
            '\\x00'::bytea, g, CASE WHEN g > {finished} THEN 'queued' ELSE 'finished' END,
            CASE WHEN g > {finished} THEN NULL ELSE g END
        FROM generate_series(1, {total}) g""")
    cluster.psql(database, "-c", "VACUUM ANALYZE publish_jobs")


def pgbench(cluster, database, script, claims):
    out = subprocess.run(
        [f"{postgresql_cluster.BIN}/pgbench", "-n", "-M", "prepared", "-t", str(claims), "-f", script,
         *[f"--define={variable}={value}" for variable, value in PARAMETERS.values()],
         "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres", database],
        check=True, text=True, capture_output=True).stdout
    return float(re.search(r"latency average = ([0-9.]+) ms", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="HEAD", help="the revision compared with this tree (default HEAD)")
    parser.add_argument("--queued", type=int, default=33000)
    parser.add_argument("--finished", type=int, default=200000)
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--claims", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    root = benchdb.ROOT
    sources = {
        "base": subprocess.run(["git", "-C", str(root), "show", f"{arguments.base}:{SOURCE}"], check=True,
                               text=True, capture_output=True).stdout,
        "this tree": (root / SOURCE).read_text(),
    }
    work = Path(tempfile.mkdtemp(prefix="claim-bench-"))
    scripts = {}
    for name, source in sources.items():
        path = work / f"{name.replace(' ', '-')}.sql"
        path.write_text(statement(source, arguments.base if name == "base" else "the tree") + ";\n")
        scripts[name] = str(path)
    cluster = benchdb.BenchCluster()
    database = benchdb.new_database(cluster, "claim")
    sink = benchdb.Sink(work / "sink")
    benchdb.migrate(cluster, database, work, sink)
    sink.stop()
    load(cluster, database, arguments.finished, arguments.queued, arguments.instances)
    benchdb.log(f"== claim behind a backlog: {arguments.queued:,} queued over {arguments.instances} instances after "
                f"{arguments.finished:,} finished, {arguments.claims} claims a round, base {arguments.base}; "
                f"{benchdb.machine()}")
    times = {name: [] for name in scripts}
    for round_number in range(1, arguments.rounds + 1):
        line = []
        for name, script in scripts.items():
            milliseconds = pgbench(cluster, database, script, arguments.claims)
            times[name].append(milliseconds)
            line.append(f"{name} {milliseconds:.3f} ms")
        benchdb.log(f"round {round_number}: " + ", ".join(line) + f" (load {benchdb.load_average()})")
    medians = {name: statistics.median(values) for name, values in times.items()}
    left = cluster.value(database, "SELECT count(*) FROM publish_jobs WHERE state = 'queued'")
    benchdb.log(f"median per claim: base {medians['base']:.3f} ms, this tree {medians['this tree']:.3f} ms "
                f"(base / this tree: {medians['base'] / medians['this tree']:.1f}x); {int(left):,} still queued; "
                f"{benchdb.machine()}")


if __name__ == "__main__":
    main()
