"""`push-server copy-store`: a store filled through the real server's APIs moves from SQLite to PostgreSQL, serves
from there (everything found, a publish reaching every device exactly once), and moves back to a fresh SQLite file;
each copy verified table by table. Failures: a non-empty target, an unreadable source, a target that changes a row.

Starts its own throwaway PostgreSQL cluster (Tests/Support/postgresql_cluster.py) whatever PUSH_TEST_STORE says."""
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, ROOT, Environment
from platform_mocks import MockFCM
from receiver import Receiver

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import postgresql_cluster  # noqa: E402

pytestmark = pytest.mark.skipif(not postgresql_cluster.installed(), reason="PostgreSQL 15 is not installed")

APNS_DEVICES = 12
FCM_DEVICES = 4


def binary():
    return os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))


def copy_store(source, target, *extra):
    return subprocess.run([binary(), "copy-store", "--from", str(source), "--to", str(target), *extra],
                          capture_output=True, text=True, timeout=300)


def config_with_storage(server, storage, path):
    """The server's own config with another `storage` section, written to `path`."""
    config = json.loads(server.config_path.read_text())
    config["storage"] = storage
    path.write_text(json.dumps(config))
    return path


def rfc3339(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fcm_token(n):
    """A registration token's shape (`<installation id>:APA91b…`), as the FCM stand-in expects."""
    return f"{uuid.uuid4().hex[:22]}:APA91b{n:04d}{uuid.uuid4().hex * 3}"


def register_fcm(server, token, interests):
    session = requests.Session()
    base = server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/fcm")
    r = session.post(base, json={"token": token, "knownPreviousClientIds": [], "metadata": {"sdkVersion": "1.9.2"}},
                     verify=server.cert, timeout=10)
    assert r.status_code == 200, r.text
    device = r.json()["id"]
    r = session.put(f"{base}/{device}/interests", json={"interests": interests}, verify=server.cert, timeout=10)
    assert r.status_code == 200, r.text
    return device


@pytest.fixture(scope="module")
def cluster():
    return postgresql_cluster.shared()


@pytest.fixture(scope="module")
def filled(tmp_path_factory, cluster):
    """A SQLite store filled through the server's APIs, then the server stopped: what a move starts from."""
    directory = tmp_path_factory.mktemp("copy-store")
    environment = Environment(directory)
    mock = environment.mock()
    sqlite_path = directory / "source.sqlite"
    fcm_mock = MockFCM(directory)
    environment.processes.append(fcm_mock)
    fcm_section = {"fcm": fcm_mock.config()}
    server = environment.server(mock, {"storage": {"path": str(sqlite_path)}}, fcm_section)
    client = Beams(server)
    news = unique("news")
    apns = {}
    for n in range(APNS_DEVICES):
        token = random_token()
        user = f"user-{n % 4}" if n % 2 == 0 else None
        apns[client.register(token, [news, f"topic-{n % 3}"], user=user)] = token
    fcm_tokens = [fcm_token(n) for n in range(FCM_DEVICES)]
    fcm = [register_fcm(server, token, [news]) for token in fcm_tokens]
    # A Live Activity start token on one device; a device whose token APNs reports dead (the invalidation log).
    live_device = next(iter(apns))
    r = client.session.put(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{live_device}"
                                      "/live-activity/start-tokens/Match"), json={"token": random_token()}, timeout=10)
    assert r.status_code == 200, r.text
    dead = random_token()
    mock.behave(dead, status=410, reason="Unregistered", timestamp=int(time.time() * 1000) + 60_000)
    dead_id = client.register(dead, [news])
    # A finished publish (results, counters, an APNs provider token) whose webhook outbox rows cannot be delivered
    # (nothing listens), so they stay pending; a publish scheduled an hour ahead.
    hook = Receiver(fail_first=1_000)
    finished = client.publish("interests", {"interests": [news], "apns": alert("before the move"),
                                            "fcm": {"notification": {"title": "before the move"}},
                                            "webhookUrl": hook.url()})
    client.wait_finished(finished)
    r = client.publish_raw("/interests", {"interests": [news], "apns": alert("later"),
                                          "x_delivery": {"sendAt": rfc3339(time.time() + 3600)}})
    assert r.status_code == 200, r.text
    scheduled = r.json()["publishId"]
    wait_for(lambda: len(hook.bodies(finished)) >= 1, message="the webhook was not attempted")
    for token in apns.values():
        assert len(mock.requests_for(token)) == 1
    for token in fcm_tokens:
        assert len(fcm_mock.requests(token)) == 1
    assert server.stop() == 0
    hook.close()
    yield {"environment": environment, "directory": directory, "server": server, "mock": mock, "sqlite": sqlite_path,
           "apns": apns, "fcm": fcm, "news": news, "finished": finished, "scheduled": scheduled,
           "live_device": live_device, "dead_id": dead_id, "fcm_mock": fcm_mock, "fcm_tokens": fcm_tokens,
           "fcm_section": fcm_section}
    environment.close()


def assert_verified(result):
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    table = {line.split()[0]: line.split() for line in lines[1:-1]}
    for name in ("devices", "interests", "device_interests", "publish_jobs", "publish_counters", "webhooks",
                 "apns_provider_tokens", "instance_counts"):
        assert name in table, result.stdout
        assert table[name][-1] == "ok", result.stdout
    assert "every table matches" in lines[-1], result.stdout
    return table


def test_sqlite_to_postgresql_and_back_keeps_every_device_and_publishes_once(filled, cluster):
    directory, server, mock = filled["directory"], filled["server"], filled["mock"]
    database = cluster.create_database("copy")
    pg_config = config_with_storage(server, {"backend": "postgresql", "postgresql": {
        "connectionString": cluster.connection_string(database)}}, directory / "pg.json")

    result = copy_store(filled["sqlite"], pg_config)
    table = assert_verified(result)
    # The dead device stays, marked invalidated, until retention removes it.
    assert int(table["devices"][1]) == APNS_DEVICES + FCM_DEVICES + 1, result.stdout
    assert int(table["publish_jobs"][1]) == 2 and int(table["webhooks"][1]) >= 1, result.stdout
    assert int(table["apns_provider_tokens"][1]) == 1, result.stdout
    assert int(table["live_activity_tokens"][1]) == 1 and int(table["device_invalidations"][1]) == 1, result.stdout
    assert "copying devices" in result.stderr, result.stderr

    # The server on PostgreSQL finds everything.
    on_pg = filled["environment"].server(mock, {"storage": json.loads(pg_config.read_text())["storage"]},
                                         filled["fcm_section"], name="pg")
    client = Beams(on_pg)
    for device_id in list(filled["apns"]) + filled["fcm"]:
        device = client.device(device_id)
        assert filled["news"] in device["interests"], device
    statuses = {p["publishId"]: p for p in client.recent()}
    assert statuses[filled["finished"]]["status"] == "finished", statuses
    assert client.status(filled["finished"])["apns"]["accepted"] == APNS_DEVICES
    assert client.status(filled["scheduled"])["status"] == "scheduled"
    r = client.session.get(on_pg.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{filled['live_device']}"
                                     "/live-activity"), timeout=10)
    assert r.status_code == 200 and "Match" in r.text, r.text
    invalidations = client.session.get(on_pg.url(f"/customer_api/v1/instances/{INSTANCE_ID}/devices/invalidations"),
                                       headers={"Authorization": f"Bearer {client.secret}"}, timeout=10)
    assert invalidations.status_code == 200, invalidations.text
    assert [e["device_id"] for e in invalidations.json()["events"]] == [filled["dead_id"]], invalidations.text
    pending = cluster.sql("SELECT count(*) FROM webhooks WHERE state = 'pending'", database)
    assert int(pending) >= 1

    # A publish from the new store reaches each APNs and FCM device exactly once (the strict mocks count per token).
    fcm_mock = filled["fcm_mock"]
    before = {token: len(mock.requests_for(token)) for token in filled["apns"].values()}
    before_fcm = {token: len(fcm_mock.requests(token)) for token in filled["fcm_tokens"]}
    publish_id = client.publish("interests", {"interests": [filled["news"]], "apns": alert("after the move"),
                                              "fcm": {"notification": {"title": "after the move"}}})
    status = client.wait_finished(publish_id)
    assert status["apns"]["accepted"] == APNS_DEVICES, status
    assert status["fcm"]["accepted"] == FCM_DEVICES, status
    time.sleep(0.5)
    for token, count in before.items():
        assert len(mock.requests_for(token)) == count + 1, token
    for token, count in before_fcm.items():
        assert len(fcm_mock.requests(token)) == count + 1, token
    assert on_pg.stop() == 0

    # And back to a fresh SQLite file, verified the same way; a server starts on it and finds the devices.
    back = config_with_storage(server, {"path": str(directory / "back.sqlite")}, directory / "back.json")
    result = copy_store(pg_config, back)
    table = assert_verified(result)
    assert int(table["publish_jobs"][1]) == 3, result.stdout
    on_sqlite = filled["environment"].server(mock, {"storage": {"path": str(directory / "back.sqlite")}},
                                             name="back")
    client = Beams(on_sqlite)
    for device_id in filled["apns"]:
        assert filled["news"] in client.device(device_id)["interests"]
    assert client.status(publish_id)["status"] == "finished"
    assert on_sqlite.stop() == 0


def test_copy_into_a_target_that_holds_rows_is_refused_and_changes_nothing(filled, cluster):
    directory, server = filled["directory"], filled["server"]
    database = cluster.create_database("copy")
    pg_config = config_with_storage(server, {"backend": "postgresql", "postgresql": {
        "connectionString": cluster.connection_string(database)}}, directory / "refuse.json")
    assert_verified(copy_store(filled["sqlite"], pg_config))
    cluster.sql("UPDATE devices SET metadata = '{\"kept\":true}'", database)

    again = copy_store(filled["sqlite"], pg_config)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "the target is not empty" in again.stderr and "--replace" in again.stderr, again.stderr
    assert cluster.sql("SELECT count(*) FROM devices WHERE metadata = '{\"kept\":true}'", database) == cluster.sql(
        "SELECT count(*) FROM devices", database) != "0"

    replaced = copy_store(filled["sqlite"], pg_config, "--replace")
    assert_verified(replaced)
    assert cluster.sql("SELECT count(*) FROM devices WHERE metadata = '{\"kept\":true}'", database) == "0"


def test_unreadable_sources_are_refused_with_the_reason(filled, tmp_path):
    target = config_with_storage(filled["server"], {"path": str(tmp_path / "t.sqlite")}, tmp_path / "t.json")
    missing = copy_store(tmp_path / "nothing-here.sqlite", target)
    assert missing.returncode == 1 and "no such file" in missing.stderr, missing.stderr
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    corrupt = copy_store(garbage, target)
    assert corrupt.returncode == 1 and "cannot read the source" in corrupt.stderr, corrupt.stderr
    neither = tmp_path / "notes.txt"
    neither.write_text("not a config")
    unknown = copy_store(neither, target)
    assert unknown.returncode == 1 and "neither a SQLite database nor a valid config" in unknown.stderr, unknown.stderr


def test_a_row_changed_on_its_way_into_the_target_fails_the_verification(filled, cluster):
    """The target's own trigger alters one device's metadata as it is inserted (as a faulty extension or column
    default would): the copy commits, and the read-back checksum of `devices` no longer matches the source's."""
    database = cluster.create_database("copy")
    storage = {"backend": "postgresql", "postgresql": {"connectionString": cluster.connection_string(database)}}
    target = config_with_storage(filled["server"], storage, filled["directory"] / "tampered.json")
    # The schema comes from the normal migrator (a server start); then the trigger is added.
    migrated = filled["environment"].server(filled["mock"], {"storage": storage}, name="tampered")
    assert migrated.stop() == 0
    victim = min(filled["apns"])
    cluster.sql(f"""CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN IF NEW.public_id = '{victim}' THEN NEW.metadata := '{{"tampered":true}}'; END IF;
                    RETURN NEW; END $$;
                    CREATE TRIGGER tamper BEFORE INSERT ON devices FOR EACH ROW EXECUTE FUNCTION tamper();""", database)
    result = copy_store(filled["sqlite"], target)
    assert result.returncode == 1, result.stdout + result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:-1]}
    assert rows["devices"][-1] == "MISMATCH", result.stdout + result.stderr
    assert rows["devices"][1] == rows["devices"][2], result.stdout
    assert rows["interests"][-1] == "ok", result.stdout
    assert "verification FAILED" in result.stderr, result.stderr
    assert cluster.sql(f"SELECT metadata FROM devices WHERE public_id = '{victim}'", database) == '{"tampered":true}'


def test_a_copy_while_the_server_registers_devices_copies_one_consistent_snapshot(tmp_path, cluster):
    """The source server keeps running and registering during the copy: the copy is not blocked by it, verifies,
    and holds one moment of the source: the per-instance device count (kept by a trigger in the same transaction as
    each registration) agrees with the devices copied, which tables read at different moments would not."""
    environment = Environment(tmp_path)
    try:
        mock = environment.mock()
        server = environment.server(mock, {"storage": {"path": str(tmp_path / "live.sqlite")}})
        client = Beams(server)
        interest = unique("live")
        for _ in range(50):
            client.register(random_token(), [interest])
        stop = threading.Event()
        registered = []

        def keep_registering():
            while not stop.is_set():
                registered.append(client.register(random_token(), [interest]))

        writer = threading.Thread(target=keep_registering)
        writer.start()
        try:
            time.sleep(0.3)
            database = cluster.create_database("copy")
            target = config_with_storage(server, {"backend": "postgresql", "postgresql": {
                "connectionString": cluster.connection_string(database)}}, tmp_path / "live-pg.json")
            result = copy_store(tmp_path / "live.sqlite", target)
            time.sleep(0.3)
        finally:
            stop.set()
            writer.join(timeout=30)
        table = assert_verified(result)
        copied = int(table["devices"][1])
        assert 50 <= copied <= 50 + len(registered), (copied, len(registered))
        assert len(registered) > 0
        counted = cluster.sql(f"SELECT devices FROM instance_device_counts WHERE instance_id = '{INSTANCE_ID}'",
                              database)
        assert int(counted) == copied, (counted, copied)
        assert server.stop() == 0
    finally:
        environment.close()


def test_a_table_the_copy_does_not_know_is_refused_before_anything_is_written(filled, cluster):
    """A later migration's table (here made by hand) would be skipped silently; the copy refuses instead."""
    database = cluster.create_database("copy")
    storage = {"backend": "postgresql", "postgresql": {"connectionString": cluster.connection_string(database)}}
    target = config_with_storage(filled["server"], storage, filled["directory"] / "unknown.json")
    migrated = filled["environment"].server(filled["mock"], {"storage": storage}, name="unknown")
    assert migrated.stop() == 0
    cluster.sql("CREATE TABLE device_tags (device_id bigint, tag text); ALTER TABLE devices ADD COLUMN locale text",
                database)
    result = copy_store(filled["sqlite"], target)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "tables this copy does not know: device_tags" in result.stderr, result.stderr
    cluster.sql("DROP TABLE device_tags", database)
    result = copy_store(filled["sqlite"], target)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "table devices has columns this copy does not know: locale" in result.stderr, result.stderr
    assert cluster.sql("SELECT count(*) FROM devices", database) == "0"


def test_a_copy_between_two_stores_of_the_same_kind_is_refused_without_creating_the_target(filled, tmp_path):
    target_path = tmp_path / "same.sqlite"
    target = config_with_storage(filled["server"], {"path": str(target_path)}, tmp_path / "same.json")
    result = copy_store(filled["sqlite"], target)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "source and target are both SQLite" in result.stderr, result.stderr
    assert not target_path.exists()
