#!/usr/bin/env python3
"""The migration round trip of issue 28 at registry scale (docs/BENCHMARKS.md, "Migration round trip"):

1. a SQLite store with N devices in one instance (filled by `push-server import` of a generated device file: APNs
   tokens, every device following `roundtrip` and 0-2 of 20 other interests, every fifth bound to a user, every
   seventh with a time zone);
2. `push-server export` of the instance from SQLite (checked: N device lines);
3. `push-server import` of that file into a fresh PostgreSQL database (checked: N created, 0 refused);
4. a server on the PostgreSQL store publishes once to `roundtrip`, delivered to a local APNs sink (nginx,
   bench/apns/nginx-sink.sh, which logs each request's token): every device reached exactly once, no token that is
   not in the file, no answer other than 200;
5. `push-server copy-store` from PostgreSQL back to a fresh SQLite file (checked: exit 0, every table's count and
   checksum matching, N devices and the same subscriptions in the copy).

Each step prints its wall time and the load average (the machine is shared); the script exits 1 when a check fails.
PostgreSQL is bench/postgresql/benchdb.py's throwaway cluster (fsync on, shared_buffers 256 MB).

    bench/migration/roundtrip.py [--devices 100000]
"""
import argparse
import collections
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "postgresql"))
import benchdb  # noqa: E402

INSTANCE = benchdb.INSTANCE
INTEREST = "roundtrip"


def generate(path, count):
    """N APNs devices; returns their tokens."""
    rng = random.Random(2828)
    names = [f"topic-{n}" for n in range(20)]
    tokens = []
    with open(path, "w") as out:
        out.write(json.dumps({"format": "push-server-devices", "version": 1}) + "\n")
        for n in range(count):
            token = "%064x" % rng.getrandbits(256)
            tokens.append(token)
            device = {"platform": "apns", "token": token, "bundleId": "com.example.bench",
                      "interests": [INTEREST] + rng.sample(names, rng.randint(0, 2)),
                      "metadata": {"n": n}, "createdAt": "2026-01-01T00:00:00.000Z",
                      "lastRegisteredAt": "2026-06-01T00:00:00.000Z"}
            if n % 5 == 0:
                device["userId"] = f"user-{n}"
            if n % 7 == 0:
                device["timeZone"] = "Europe/Paris"
            out.write(json.dumps(device) + "\n")
    return tokens


def write_config(path, storage, devices):
    path.write_text(json.dumps({
        "listen": {"host": "127.0.0.1", "port": benchdb.free_port()}, "storage": storage,
        "instances": [{"id": INSTANCE, "secretKey": benchdb.SECRET}],
        "limits": {"maxDevicesPerInstance": max(2 * devices, 1_000_000), "maxSubscriptionsPerInstance": 8 * devices},
    }))
    return path


class Steps:
    def __init__(self):
        self.failed = []

    def timed(self, label, command):
        load = benchdb.load_average()
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True)
        seconds = time.monotonic() - started
        benchdb.log(f"{label:<34} {seconds:7.1f} s   load {load} -> {benchdb.load_average()}   exit {result.returncode}")
        return result, seconds

    def check(self, label, ok, detail=""):
        benchdb.log(f"  check: {label}: {'ok' if ok else 'FAILED'}{'  ' + detail if detail else ''}")
        if not ok:
            self.failed.append(label)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=100_000)
    arguments = parser.parse_args()
    n = arguments.devices
    binary = benchdb.server_binary()
    work = Path(tempfile.mkdtemp(prefix="bench-roundtrip-"))
    steps = Steps()
    try:
        benchdb.log(f"round trip of {n} devices: {benchdb.machine()}")
        source_file = work / "devices.ndjson"
        tokens = generate(source_file, n)
        expected = set(tokens)

        # 1. The SQLite instance.
        sqlite_config = write_config(work / "sqlite.json", {"path": str(work / "source.sqlite")}, n)
        common = ["--instance", INSTANCE]
        result, _ = steps.timed("1. fill SQLite (import)", [binary, "import", "--config", str(sqlite_config), *common,
                                                           "--json", str(source_file)])
        report = json.loads(result.stdout)
        steps.check("SQLite holds every device", result.returncode == 0 and report["created"] == n, str(report["created"]))

        # 2. Export from SQLite.
        exported = work / "export.ndjson"
        result, seconds = steps.timed("2. export from SQLite", [binary, "export", "--config", str(sqlite_config),
                                                               *common, "--output", str(exported)])
        lines = [json.loads(line) for line in open(exported)]
        devices = [line for line in lines if "platform" in line]
        steps.check("export has every device", result.returncode == 0 and len(devices) == n
                    and {device["token"] for device in devices} == expected, f"{len(devices)} device lines, "
                    f"{n / seconds:.0f} devices/s")

        # 3. Import into PostgreSQL.
        cluster = benchdb.BenchCluster()
        database = benchdb.new_database(cluster, "roundtrip")
        sink_directory = work / "sink"
        sink_directory.mkdir()
        access_log = sink_directory / "access.log"
        sink = benchdb.Sink(sink_directory, access_log=access_log)
        node_directory = work / "node"
        # The node writes the config the CLI commands use too (storage, instance, its APNs endpoint: the sink).
        node = benchdb.Node(node_directory, benchdb.storage_postgresql(cluster, database), sink)
        node.stop()
        pg_config = node_directory / "config.json"
        config = json.loads(pg_config.read_text())
        config["limits"] = {**config.get("limits", {}), "maxDevicesPerInstance": max(2 * n, 1_000_000),
                            "maxSubscriptionsPerInstance": 8 * n}
        pg_config.write_text(json.dumps(config))
        result, seconds = steps.timed("3. import into PostgreSQL", [binary, "import", "--config", str(pg_config),
                                                                   *common, "--json", str(exported)])
        report = json.loads(result.stdout)
        steps.check("PostgreSQL created every device, refused none",
                    result.returncode == 0 and (report["created"], report["refused"]) == (n, 0),
                    f"created {report['created']}, refused {report['refused']}, {n / seconds:.0f} devices/s")
        pg_subscriptions = int(cluster.value(database, "SELECT count(*) FROM device_interests"))
        counted = cluster.rows(database, "SELECT devices, subscriptions FROM instance_device_counts")
        steps.check("PostgreSQL's cap counts equal its rows", counted == [[str(n), str(pg_subscriptions)]],
                    f"counts {counted}, {pg_subscriptions} subscriptions")

        # 4. Publish from the PostgreSQL store.
        node.start()
        started = time.monotonic()
        publish_id = node.publish(INTEREST)
        status = benchdb.wait_finished(node, publish_id, timeout=1800, interval=0.2)
        seconds = time.monotonic() - started
        benchdb.log(f"{'4. publish from PostgreSQL':<34} {seconds:7.1f} s   load {benchdb.load_average()}   "
                    f"{n / seconds:.0f} notifications/s, status {status['status']}")
        node.stop()
        sink.stop()  # flushes the access log
        delivered, other = collections.Counter(), collections.Counter()
        with open(access_log) as log:
            for line in log:
                path, code = line.split()
                (delivered if code == "200" else other)[path.rsplit("/", 1)[-1]] += 1
        missing = sum(1 for token in expected if delivered[token] == 0)
        duplicates = sum(max(0, delivered[token] - 1) for token in expected)
        strangers = sum(count for token, count in delivered.items() if token not in expected)
        steps.check("every device reached exactly once", (missing, duplicates, strangers, sum(other.values())) ==
                    (0, 0, 0, 0), f"{sum(delivered.values())} answered 200, missing {missing}, duplicates {duplicates}, "
                    f"unknown tokens {strangers}, not 200 {sum(other.values())}")

        # 5. copy-store back to SQLite.
        back = work / "back.sqlite"
        back_config = write_config(work / "back.json", {"path": str(back)}, n)
        result, seconds = steps.timed("5. copy-store PostgreSQL -> SQLite",
                                      [binary, "copy-store", "--from", str(pg_config), "--to", str(back_config)])
        for line in result.stdout.splitlines():
            benchdb.log(f"     {line}")
        steps.check("copy-store verified every table", result.returncode == 0 and "every table matches" in result.stdout)
        with sqlite3.connect(back) as connection:
            copied = connection.execute("SELECT count(*) FROM devices").fetchone()[0]
            links = connection.execute("SELECT count(*) FROM device_interests").fetchone()[0]
            counts = connection.execute("SELECT devices FROM instance_device_counts").fetchall()
        steps.check("the SQLite copy holds every device and subscription", (copied, links, counts) ==
                    (n, pg_subscriptions, [(n,)]), f"{copied} devices, {links} subscriptions, counts {counts}")
        cluster.stop()
    finally:
        subprocess.run(["rm", "-rf", str(work)])
    benchdb.log("all checks passed" if not steps.failed else f"FAILED: {', '.join(steps.failed)}")
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
