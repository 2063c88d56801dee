"""`push-server copy-store` timed both ways at registry scale (docs/BENCHMARKS.md, "Store move").

A SQLite store is created by the server's own migrator (one `serve` start and SIGTERM), filled directly with SQL
(N APNs devices, every fifth with a user id, each following 2 of 100 interests; one finished publish with counters;
a few invalidation log rows), then copied to a fresh PostgreSQL database and from there to a fresh SQLite file. Each
copy is the release binary's wall time, its own verification included (its table goes to the output), with the
load average before and after: the machine is shared.

    python3 bench/copystore/copystore.py [--devices 100000]

PostgreSQL: bench/postgresql/benchdb.py's throwaway cluster (fsync on, shared_buffers 256 MB, max_wal_size 4 GB).
"""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "postgresql"))
import benchdb  # noqa: E402

INSTANCE = benchdb.INSTANCE


def config(directory, storage):
    port = benchdb.free_port()
    path = directory / f"config-{port}.json"
    path.write_text(json.dumps({
        "listen": {"host": "127.0.0.1", "port": port}, "storage": storage, "log": {"level": "warning"},
        "instances": [{"id": INSTANCE, "secretKey": benchdb.SECRET}],
    }))
    return path, port


def migrate_sqlite(directory, path):
    """The schema the server's migrator creates: start it once on the new file, stop it when it answers."""
    config_path, port = config(directory, {"path": str(path)})
    server = subprocess.Popen([benchdb.server_binary(), "serve", "--config", str(config_path)],
                              stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def fill(path, devices):
    rng = random.Random(1)
    now = int(time.time() * 1000)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    with db:
        db.executemany("INSERT INTO interests (id, instance_id, name) VALUES (?, ?, ?)",
                       [(i + 1, INSTANCE, f"topic-{i}") for i in range(100)])

        def device_rows():
            for n in range(1, devices + 1):
                yield (n, f"apns-{n:012d}-{rng.getrandbits(64):016x}", INSTANCE, "apns", "%064x" % rng.getrandbits(256),
                       "production", n % 2, "com.example.app", '{"sdkVersion":"4.0.0","appVersion":"2.1"}',
                       f"user-{n}" if n % 5 == 0 else None, now - n, now - n)
        db.executemany("""INSERT INTO devices (id, public_id, instance_id, platform, token, environment,
                          environment_declared, bundle_id, metadata, user_id, created_at, last_registered_at)
                          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", device_rows())

        def links():
            for n in range(1, devices + 1):
                first = n % 100 + 1
                yield (first, n)
                yield ((first + 37) % 100 + 1, n)
        db.executemany("INSERT INTO device_interests (interest_id, device_id) VALUES (?, ?)", links())
        db.execute("""INSERT INTO publish_jobs (id, instance_id, publish_id, kind, targets, payload, state, created_at,
                      finished_at, targets_total, summary) VALUES (1, ?, 'pub-1', 'interests', '["topic-1"]', ?,
                      'finished', ?, ?, ?, '{}')""", (INSTANCE, b'{"apns":{}}', now, now, devices // 50))
        db.executemany("INSERT INTO publish_counters (job_id, name, value) VALUES (1, ?, ?)",
                       [("apns.accepted", devices // 50), ("apns.failed", 0)])
        db.executemany("""INSERT INTO device_invalidations (instance_id, device_id, platform, token_mask, reason, status,
                          at) VALUES (?, ?, 'apns', 'abcd…wxyz', 'Unregistered', 410, ?)""",
                       [(INSTANCE, f"apns-gone-{n}", now) for n in range(100)])
    db.close()


def timed_copy(source, target):
    load_before = benchdb.load_average()
    started = time.monotonic()
    result = subprocess.run([benchdb.server_binary(), "copy-store", "--from", str(source), "--to", str(target)],
                            capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"copy-store failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    # Each table's last progress line: its rows and rate while it copied.
    finals = {}
    for line in result.stderr.splitlines():
        if line.startswith("copy-store: copying "):
            finals[line.split(":")[1]] = line
    return seconds, load_before, benchdb.load_average(), "\n".join(finals.values()) + "\n" + result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=100_000)
    arguments = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="copystore-bench-"))
    try:
        source = directory / "source.sqlite"
        migrate_sqlite(directory, source)
        started = time.monotonic()
        fill(source, arguments.devices)
        benchdb.log(f"filled {arguments.devices} devices, {2 * arguments.devices} subscriptions in "
                    f"{time.monotonic() - started:.1f} s; SQLite file {source.stat().st_size / 1e6:.0f} MB")
        cluster = benchdb.BenchCluster()
        database = benchdb.new_database(cluster, "copystore")
        pg_config, _ = config(directory, benchdb.storage_postgresql(cluster, database))
        benchdb.log(f"machine: {benchdb.machine()}")
        seconds, before, after, table = timed_copy(source, pg_config)
        benchdb.log(f"SQLite -> PostgreSQL: {seconds:.1f} s wall (load average before {before}, after {after})")
        benchdb.log(table)
        back = directory / "back.sqlite"
        back_config, _ = config(directory, {"path": str(back)})
        seconds, before, after, table = timed_copy(pg_config, back_config)
        benchdb.log(f"PostgreSQL -> SQLite: {seconds:.1f} s wall (load average before {before}, after {after})")
        benchdb.log(table)
        size = cluster.value(database, f"SELECT pg_database_size('{database}')")
        benchdb.log(f"PostgreSQL database {int(size) / 1e6:.0f} MB; SQLite copy {back.stat().st_size / 1e6:.0f} MB")
        cluster.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
