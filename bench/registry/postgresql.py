"""Device registrations per second on PostgreSQL through the HTTP API: one node or two on one database, new tokens or
re-registrations of known ones (what every app launch sends), two builds alternated in one run.

    python3 bench/registry/postgresql.py [--nodes 2] [--seconds 10] [--pool 500] [--rounds 2] [--base BIN]

Each round starts a fresh database on a throwaway PostgreSQL 15 cluster (fsync on, bench/postgresql/benchdb.py),
the build's node(s) on it, fills the token pool (`wrk` with register.lua's TOKEN_POOL), then runs `wrk -t2 -c32`
against every node at once for `--seconds`, each wrk on the same pool, so the nodes register the same tokens
concurrently. Printed per round and build: requests/s summed over the nodes, p99, and errors; then the medians and the
ratio this build / --base. SERVER_BIN is this build (default .build/release/push-server); --base another (e.g. a
base commit's release binary). The limits that would measure the limiter instead of the store are lifted
(per-address and device API rates); the device cap stays finite, so the capped registration path is the one run.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "postgresql"))
import benchdb  # noqa: E402

LIMITS = {"deviceRequestsPerSecondPerInstance": 1_000_000, "ipBurst": 10_000_000, "maxDevicesPerInstance": 1_000_000_000}


def wrk(node, seconds, pool):
    environment = {**os.environ, "INSTANCE": benchdb.INSTANCE, "TOKEN_POOL": str(pool)}
    return subprocess.Popen(["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency", "-s",
                             str(ROOT / "bench/registry/register.lua"), f"http://127.0.0.1:{node.port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment)


def parse(output):
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", output)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    errors = re.search(r"non-2xx or socket errors: (\d+)", output)
    return rate, float(p99.group(1)) * scale[p99.group(2)] if p99 else float("nan"), int(errors.group(1)) if errors else -1


def one_round(binary, cluster, sink, arguments, directory):
    os.environ["SERVER_BIN"] = binary
    database = cluster.create_database("registry")
    nodes = [benchdb.Node(directory / f"node{n}", benchdb.storage_postgresql(cluster, database), sink,
                          log_level="warning", limits=LIMITS) for n in range(arguments.nodes)]
    try:
        for process in [wrk(node, 3, arguments.pool) for node in nodes]:
            process.communicate()
        results = [parse(process.communicate()[0]) for process in
                   [wrk(node, arguments.seconds, arguments.pool) for node in nodes]]
    finally:
        for node in nodes:
            node.stop()
    return sum(r[0] for r in results), max(r[1] for r in results), sum(r[2] for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--pool", type=int, default=500, help="tokens per wrk thread; 0: a new token each request")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", help="another build's binary, alternated with this one")
    arguments = parser.parse_args()
    builds = {"this": benchdb.server_binary()}
    if arguments.base:
        builds["base"] = arguments.base
    cluster = benchdb.BenchCluster()
    directory = Path(tempfile.mkdtemp(prefix="bench-registry-pg-"))
    sink = benchdb.Sink(directory / "sink")
    mode = f"{arguments.pool} known tokens per wrk thread" if arguments.pool else "a new token each request"
    benchdb.log(f"== registrations on PostgreSQL, {arguments.nodes} node(s), {mode}, {arguments.seconds} s, "
                f"{benchdb.machine()}")
    rates = {name: [] for name in builds}
    for round_number in range(arguments.rounds):
        order = list(builds) if round_number % 2 == 0 else list(reversed(builds))
        for name in order:
            rate, p99, errors = one_round(builds[name], cluster, sink, arguments,
                                          directory / f"{name}-{round_number}")
            rates[name].append(rate)
            benchdb.log(f"round {round_number + 1} {name:4}: {rate:8.0f}/s  p99 {p99:7.1f} ms  errors {errors}  "
                        f"load {benchdb.load_average()}")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    benchdb.log("medians: " + ", ".join(f"{name} {value:.0f}/s" for name, value in medians.items()))
    if "base" in medians:
        benchdb.log(f"ratio this/base: {medians['this'] / medians['base']:.2f}")


if __name__ == "__main__":
    main()
