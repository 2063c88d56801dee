"""A full disk or a read-only database is an outage to report, not an error per request (docs/OPERATIONS.md,
"When the store cannot write").

The database lives on a real 3 MB file system (a tmpfs mounted for the test; config and log stay on the normal
disk, so the log can be read while the small one is full). Filling it with a file gives SQLite the same ENOSPC a
full disk does. Mounting needs root (CI runs as root); elsewhere these tests skip and say why.
"""
import errno
import os
import re
import subprocess
import time
from collections import Counter

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import Mock, Server, write_apns_key

SIZE = "3m"
LOG_INTERVAL_S = 2
RETRY_AFTER_S = 7
REFUSED = {"error": "Service Unavailable",
           "description": "The server cannot store data right now; nothing was stored. Retry later"}


def mount_tmpfs(directory, size):
    """Mounts a tmpfs of `size` on `directory`. - Returns: None, or why it cannot be done here."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root"
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return f"mount -t tmpfs is not permitted here: {result.stderr.strip()}"
    return None


@pytest.fixture
def small_env(tmp_path):
    """Starts a mock and a plain-HTTP server whose database is on a small file system of its own:
    `small_env(size)` returns (server, mock, the file system's directory); everything stops and unmounts after."""
    started = []
    mounted = []

    def start(size=SIZE):
        small_fs = tmp_path / "small-fs"
        small_fs.mkdir()
        problem = mount_tmpfs(small_fs, size)
        if problem:
            pytest.skip(problem)
        mounted.append(small_fs)
        p8, pub = write_apns_key(tmp_path)
        mock = Mock(tmp_path, pub)
        started.append(mock)
        directory = tmp_path / "server"
        directory.mkdir()
        storage = {"path": str(small_fs / "push.sqlite"), "outageLogIntervalSeconds": LOG_INTERVAL_S,
                   "outageRetryAfterSeconds": RETRY_AFTER_S}
        server = Server(directory, mock, p8, overrides={"storage": storage})
        started.append(server)
        return server, mock, small_fs

    yield start
    for process in reversed(started):
        process.stop()
    for small_fs in mounted:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], capture_output=True)
        subprocess.run(["umount", str(small_fs)], capture_output=True)


def fill(directory):
    """Writes a file until the file system is full. - Returns: its path."""
    path = directory / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        chunk = b"\0" * 65536
        while True:
            try:
                os.write(fd, chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
                break
    finally:
        os.close(fd)
    return path


def register_raw(client, token):
    return client.session.post(client.server.url(f"/device_api/v1/instances/{client.instance_id}/devices/apns"),
                               json={"token": token, "bundleIdentifier": "com.example.sdktest"}, timeout=10)


def write_until_refused(client):
    """Registers devices until the store refuses one. After the file system is full, the WAL may still have room:
    a commit or two at its end, or, once SQLite has checkpointed it and started over, the whole file (up to 1000
    pages). This uses it up, so the next write anywhere in the server fails. - Returns: the refusal."""
    for _ in range(2000):
        response = register_raw(client, random_token())
        if response.status_code != 200:
            return response
    raise AssertionError("registrations never failed on a full disk")


def assert_refused(response):
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == str(RETRY_AFTER_S)
    assert response.json() == REFUSED


def ready(server, **headers):
    return requests.get(server.url("/ready"), headers=headers, timeout=5)


def metric(server, series):
    text = requests.get(server.url("/metrics"), timeout=5).text
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def log_count(server, message):
    return server.log_path.read_text().count(f'msg="{message}')


def test_full_disk_answers_503_reports_once_per_interval_and_recovers_by_itself(small_env):
    server, mock, small_fs = small_env()
    client = Beams(server)
    interest = unique("outage")
    subscriber = random_token()
    client.register(subscriber, interests=[interest])
    assert ready(server).status_code == 200
    assert metric(server, "push_store_writable") == 1

    filler = fill(small_fs)
    assert_refused(write_until_refused(client))
    refused = 1
    started = time.monotonic()
    # Requests keep coming during the outage: every one is refused the same way.
    while time.monotonic() - started < 2.5 * LOG_INTERVAL_S:
        assert_refused(register_raw(client, random_token()))
        assert_refused(client.publish_raw("/interests", {"interests": [interest], "apns": alert()}))
        refused += 2
        time.sleep(0.05)

    # Readiness: the details for the operator (a loopback peer), only the verdict for anyone a proxy forwarded.
    detailed = ready(server)
    assert detailed.status_code == 503
    store = detailed.json()["checks"]["store"]
    assert store["writable"] is False and store["ok"] is False, store
    assert store["lastFailure"] == "disk_full" and store["failures"] >= refused, store
    forwarded = ready(server, **{"X-Forwarded-For": "203.0.113.7"})
    assert forwarded.status_code == 503 and forwarded.json() == {"ready": False}

    assert metric(server, "push_store_writable") == 0
    assert metric(server, 'push_store_unavailable_total{reason="disk_full"}') >= refused

    # One line when it started, then one per interval: not one per request. The lines come from the log's own
    # writer thread (Sources/Logging/BufferedLogSink.swift), so the first reminder is waited for; the intervals are
    # counted up to the moment the log is read, since the outage (and its reminders) go on meanwhile.
    log = server.wait_logged(lambda log: 'msg="Store still cannot write' in log)
    elapsed = time.monotonic() - started
    assert log.count('msg="Store cannot write') == 1
    assert 1 <= log.count('msg="Store still cannot write') <= elapsed / LOG_INTERVAL_S + 1
    assert "Handler failed" not in log and "Group commit failed" not in log

    # Space comes back: nothing else writes, yet the server notices by itself (it probes while writes fail).
    filler.unlink()
    wait_for(lambda: ready(server).status_code == 200, timeout=15, message="/ready did not recover")
    assert metric(server, "push_store_writable") == 1
    server.wait_logged('msg="Store writes again')

    # Every refused publish left nothing behind, and delivery works again.
    assert client.recent() == []
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert(title="after")})
    status = client.wait_finished(publish_id)
    assert status["apns"]["accepted"] == 1, status
    sent = mock.requests_for(subscriber)
    assert len(sent) == 1 and sent[0]["payload"]["aps"]["alert"]["title"] == "after", sent
    assert log_count(server, "Store writes again") == 1


def test_checkpoints_failing_mid_publish_lose_nothing_and_resume_when_space_returns(small_env):
    """The disk fills while a publish is being delivered: its checkpoints cannot be written. The engine keeps the
    results, retries, and finishes once space returns: every device exactly once, exact counts, no re-claim."""
    # Room for the devices' registrations (each commit appends whole pages to the WAL).
    server, mock, small_fs = small_env("16m")
    client = Beams(server)
    interest = unique("midway")
    # Enough devices that their results cannot fit in what a failed write left allocated at the end of the WAL
    # (a smaller later commit can reuse it: a disk at the edge of full lets some writes through).
    tokens = client.register_devices(200, [interest])
    mock.configure(delay_ms=1500)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    # Every notification is in flight at the mock (answers wait 1.5 s) before the disk fills.
    wait_for(lambda: len(mock.requests()) >= len(tokens), timeout=15)
    filler = fill(small_fs)
    outage_started = time.monotonic()
    assert_refused(write_until_refused(client))

    # The answers arrive (1.5 s after the requests); their checkpoints cannot be written, nor the publish's end.
    time.sleep(1.5 + 2 * LOG_INTERVAL_S)
    assert ready(server).status_code == 503
    during = client.status(publish_id)
    assert during["status"] == "running" and during["apns"]["accepted"] < len(tokens), during

    filler.unlink()
    wait_for(lambda: ready(server).status_code == 200, timeout=15, message="/ready did not recover")
    outage_seconds = time.monotonic() - outage_started
    status = client.wait_finished(publish_id, timeout=30)
    assert status["attempts"] == 1, status
    assert status["targets"] == len(tokens) and status["apns"]["accepted"] == len(tokens), status
    assert status["apns"]["failed"] == 0, status
    per_token = Counter(request["token"] for request in mock.requests())
    assert all(per_token[token] == 1 for token in tokens), per_token
    assert ready(server).status_code == 200
    log = server.wait_logged('msg="Store writes again')
    assert "Checkpoint failed" not in log, "a failing checkpoint is retried quietly; StoreHealth reports the outage"
    # At the edge of full a small commit can still fit in what failed ones left allocated, so the store may flap
    # between failing and writing: still at most about two lines per interval, and the last says it recovered.
    lines = re.findall(r'msg="(Store cannot write|Store still cannot write|Store writes again)', log)
    assert 2 <= len(lines) <= 2 * (outage_seconds / LOG_INTERVAL_S + 1), lines
    assert lines[0] == "Store cannot write" and lines[-1] == "Store writes again", lines


def test_read_only_database_at_start_up_is_refused_with_a_clear_message(small_env):
    """A database that can only be opened read-only (here its file system is remounted read-only while the server
    is stopped) is refused at start-up, naming the file: a server that can never store anything must not report
    itself ready. systemd's Restart= retries, and it starts once the file is writable again."""
    server, mock, small_fs = small_env()
    client = Beams(server)
    device_id = client.register(random_token())
    assert server.stop() == 0

    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True, capture_output=True)
    with pytest.raises(RuntimeError):
        server.start()
    assert server.proc.returncode != 0
    log = server.log_path.read_text()
    assert "Start-up failed" in log and "read_only" in log, log[-2000:]
    assert f"the database {small_fs / 'push.sqlite'} can only be opened read-only" in log, log[-2000:]

    subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=True, capture_output=True)
    server.start()
    assert ready(server).status_code == 200
    found = client.session.get(
        server.url(f"/device_api/v1/instances/{client.instance_id}/devices/apns/{device_id}"), timeout=5)
    assert found.status_code == 200, found.text

