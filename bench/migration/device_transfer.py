#!/usr/bin/env python3
"""Import and export rate of `push-server import` / `export` (docs/DATA-FORMAT.md), on SQLite and on PostgreSQL.

Generates N devices as a device file (APNs and FCM tokens, 0-3 of 50 interest names, every 5th bound to a user,
metadata, time zones on some), then per backend: `push-server import` into a fresh store (one instance, the
default caps lifted to fit N), `import` again (every line unchanged), `export` to a file. Prints devices/s for
each step, the command's own CPU seconds and the load average beside them (the machine is shared). PostgreSQL's
own CPU is not in the command's: it is the server's. PostgreSQL runs on the benchmarks' durable
cluster (bench/postgresql/benchdb.py: fsync on).

    bench/migration/device_transfer.py [--devices 1000000] [--backends sqlite,postgresql] [--batch N]
                                       [--import-only] [--sqlite-cache-mib MIB]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "postgresql"))
import benchdb  # noqa: E402

INSTANCE = benchdb.INSTANCE


def generate(path, count):
    rng = random.Random(28)
    names = [f"topic-{n}" for n in range(50)]
    with open(path, "w") as out:
        out.write(json.dumps({"format": "push-server-devices", "version": 1}) + "\n")
        for n in range(count):
            if n % 4 == 3:
                device = {"platform": "fcm", "token": f"fcm:{n:012d}:" + "%040x" % rng.getrandbits(160)}
            else:
                device = {"platform": "apns", "token": "%064x" % rng.getrandbits(256), "bundleId": "com.example.app"}
            device.update({
                "interests": rng.sample(names, rng.randint(0, 3)),
                "metadata": {"sdkVersion": "4.0.0"},
                "createdAt": "2026-01-01T00:00:00.000Z", "lastRegisteredAt": "2026-06-01T00:00:00.000Z",
            })
            if n % 5 == 0:
                device["userId"] = f"user-{n}"
            if n % 7 == 0:
                device["timeZone"] = "Europe/Paris"
            out.write(json.dumps(device) + "\n")


def config(directory, storage, devices):
    if config.sqlite_cache_mib and "path" in storage:
        storage = {**storage, "sqliteCacheMiB": config.sqlite_cache_mib}
    path = directory / "config.json"
    path.write_text(json.dumps({
        "listen": {"host": "127.0.0.1", "port": benchdb.free_port()},
        "storage": storage,
        "instances": [{"id": INSTANCE, "secretKey": benchdb.SECRET}],
        "limits": {"maxDevicesPerInstance": max(devices * 2, 1_000_000), "maxSubscriptionsPerInstance": devices * 8,
                   "maxInterestsPerInstance": 1000},
    }))
    return path


def database_cpu_seconds(cluster):
    """PostgreSQL's CPU: its live processes' (benchdb) plus what the postmaster's exited children used (a
    connection's backend exits with the command, its CPU then counted in the postmaster's cutime + cstime)."""
    postmaster = int(Path(cluster.data, "postmaster.pid").read_text().split()[0])
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    return benchdb.postgres_cpu_seconds(cluster) + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def timed(label, command, devices, cluster=None):
    start = time.monotonic()
    before = os.times()
    database_before = database_cpu_seconds(cluster) if cluster else 0
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = os.times()
    # The command's own CPU (user + system): on a shared machine the wall time also counts other sessions' work.
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if result.returncode != 0:
        raise SystemExit(f"{label} failed ({result.returncode}): {result.stdout[-2000:]}{result.stderr[-2000:]}")
    if cluster:
        time.sleep(1)  # the command's backend exits after it: counted once the postmaster has reaped it
    database = f", PostgreSQL CPU {database_cpu_seconds(cluster) - database_before:6.1f} s" if cluster else ""
    benchdb.log(f"  {label:<10} {devices:>9} devices in {seconds:7.1f} s = {devices / seconds:>8.0f} devices/s "
                f"(push-server CPU {cpu:6.1f} s{database})   load {benchdb.load_average()}   "
                f"{result.stdout.strip()[:80]}")
    return result


def run(backend, file, devices, batch, work):
    directory = Path(tempfile.mkdtemp(prefix=f"transfer-{backend}-", dir=work))
    cluster = None
    if backend == "sqlite":
        storage = {"path": str(directory / "push.sqlite")}
    else:
        cluster = run.cluster = getattr(run, "cluster", None) or benchdb.BenchCluster()
        storage = benchdb.storage_postgresql(cluster, benchdb.new_database(cluster, "transfer"))
    path = config(directory, storage, devices)
    binary = benchdb.server_binary()
    benchdb.log(f"{backend}: {benchdb.machine()}")
    common = ["--config", str(path), "--instance", INSTANCE]
    batching = ["--batch", str(batch)] if batch else []
    timed("import", [binary, "import", *common, *batching, str(file)], devices, cluster)
    if run.import_only:
        return
    timed("re-import", [binary, "import", *common, *batching, str(file)], devices, cluster)
    exported = directory / "export.ndjson"
    timed("export", [binary, "export", *common, "--output", str(exported)], devices, cluster)
    lines = sum(1 for _ in open(exported)) - 2
    assert lines == devices, f"exported {lines} of {devices}"
    exported.unlink()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--batch", type=int, default=None, help="default: the command's (2000)")
    parser.add_argument("--import-only", action="store_true", help="the first import only (no re-import, export)")
    parser.add_argument("--sqlite-cache-mib", type=int, default=None, help="storage.sqliteCacheMiB (default: the config's)")
    arguments = parser.parse_args()
    run.import_only, config.sqlite_cache_mib = arguments.import_only, arguments.sqlite_cache_mib
    work = Path(tempfile.mkdtemp(prefix="bench-transfer-"))
    file = work / "devices.ndjson"
    start = time.monotonic()
    generate(file, arguments.devices)
    benchdb.log(f"generated {arguments.devices} devices ({file.stat().st_size >> 20} MiB) in "
                f"{time.monotonic() - start:.1f} s")
    try:
        for backend in arguments.backends.split(","):
            run(backend, file, arguments.devices, arguments.batch, work)
    finally:
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
