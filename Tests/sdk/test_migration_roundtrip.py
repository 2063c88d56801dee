"""The migration round trip of issue 28, small (bench/migration/roundtrip.sh runs it at 100,000 devices): an instance
of 2,000 devices on SQLite is exported (`push-server export`), imported into PostgreSQL (`push-server import`), a
server on the PostgreSQL store publishes to every device through the strict APNs mock (each reached exactly once, no
other token), and `push-server copy-store` moves the PostgreSQL store back to a fresh SQLite file, every table's
count and checksum verified. test_copy_store.py covers copy-store both ways on a store filled through the API; this
covers the device file in the middle, at a size where batches and counts matter.

Starts its own throwaway PostgreSQL cluster (Tests/Support/postgresql_cluster.py) whatever PUSH_TEST_STORE says."""
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest

from beams import Beams, alert, unique
from harness import INSTANCE_ID, ROOT, Environment

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import postgresql_cluster  # noqa: E402

pytestmark = pytest.mark.skipif(not postgresql_cluster.installed(), reason="PostgreSQL 15 is not installed")

DEVICES = 2000


def cli(*arguments):
    binary = os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
    return subprocess.run([binary, *map(str, arguments)], capture_output=True, text=True, timeout=300)


def with_storage(config_path, storage, path):
    config = json.loads(config_path.read_text())
    config["storage"] = storage
    path.write_text(json.dumps(config))
    return path


def test_sqlite_export_imported_into_postgresql_publishes_once_to_every_device_and_copies_back(tmp_path):
    environment = Environment(tmp_path)
    try:
        mock = environment.mock()
        rng = random.Random(28)
        everyone = unique("everyone")
        tokens = ["%064x" % rng.getrandbits(256) for _ in range(DEVICES)]
        lines = [json.dumps({"format": "push-server-devices", "version": 1})]
        for n, token in enumerate(tokens):
            device = {"platform": "apns", "token": token, "interests": [everyone, f"topic-{n % 7}"]}
            if n % 5 == 0:
                device["userId"] = f"user-{n}"
            lines.append(json.dumps(device))
        source_file = tmp_path / "devices.ndjson"
        source_file.write_text("\n".join(lines) + "\n")

        # The SQLite instance (its server only writes the config and the schema).
        source = environment.server(mock, {"storage": {"path": str(tmp_path / "source.sqlite")}}, name="sqlite")
        assert source.stop() == 0
        result = cli("import", "--config", source.config_path, "--instance", INSTANCE_ID, "--json", source_file)
        assert result.returncode == 0 and json.loads(result.stdout)["created"] == DEVICES, result.stdout + result.stderr
        exported = tmp_path / "export.ndjson"
        result = cli("export", "--config", source.config_path, "--instance", INSTANCE_ID, "--output", exported)
        assert result.returncode == 0, result.stderr
        devices = [line for line in map(json.loads, exported.read_text().splitlines()) if "platform" in line]
        assert sorted(device["token"] for device in devices) == sorted(tokens)

        # Into PostgreSQL: every device created with its id, the caps' counts equal to the rows.
        cluster = postgresql_cluster.shared()
        database = cluster.create_database("roundtrip")
        storage = {"backend": "postgresql", "postgresql": {"connectionString": cluster.connection_string(database)}}
        pg_config = with_storage(source.config_path, storage, tmp_path / "pg.json")
        result = cli("import", "--config", pg_config, "--instance", INSTANCE_ID, "--json", "--batch", 300, exported)
        report = json.loads(result.stdout)
        assert (result.returncode, report["created"], report["refused"]) == (0, DEVICES, 0), result.stdout + result.stderr
        assert cluster.sql("SELECT devices || ',' || subscriptions FROM instance_device_counts", database) == \
            f"{DEVICES},{2 * DEVICES}"
        assert int(cluster.sql("SELECT count(*) FROM devices WHERE public_id = ANY(ARRAY["
                               + ",".join(f"'{device['id']}'" for device in devices) + "])", database)) == DEVICES

        # A publish from the new store: each device exactly once at the strict mock, no other token.
        server = environment.server(mock, {"storage": storage}, name="pg")
        client = Beams(server)
        status = client.wait_finished(client.publish("interests", {"interests": [everyone], "apns": alert("moved")}),
                                      timeout=120)
        assert status["apns"]["accepted"] == DEVICES, status
        mock_requests = mock.requests()
        assert len(mock_requests) < 10_000, "the mock keeps the last 10,000 requests: all of them are here"
        delivered = Counter(request["token"] for request in mock_requests)
        assert delivered == Counter({token: 1 for token in tokens})
        assert server.stop() == 0

        # And back to SQLite: copy-store verifies every table; the copy holds every device and subscription.
        back = tmp_path / "back.sqlite"
        result = cli("copy-store", "--from", pg_config, "--to", with_storage(pg_config, {"path": str(back)},
                                                                             tmp_path / "back.json"))
        assert result.returncode == 0 and "every table matches" in result.stdout.splitlines()[-1], \
            result.stdout + result.stderr
        with sqlite3.connect(back) as connection:
            assert connection.execute("SELECT count(*) FROM devices").fetchone()[0] == DEVICES
            assert connection.execute("SELECT count(*) FROM device_interests").fetchone()[0] == 2 * DEVICES
            assert connection.execute("SELECT devices FROM instance_device_counts").fetchall() == [(DEVICES,)]
    finally:
        environment.close()
