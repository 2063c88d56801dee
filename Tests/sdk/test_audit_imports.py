"""Device imports in the audit log (docs/OPERATIONS.md, "Many apps: audit log"), end to end: an import through the
admin route (device file, dry run, refused) and through `push-server import` each appear exactly once, as
`devices.import` on the instance, with the actor (a key id, or `cli:USER`), source, request id and an outcome that
carries the report's counts; an import written in several batches is still one entry; and `push-server audit
list` without `--instance` lists the whole server's log (entries of two instances), filtered by action."""
import json
import os
import subprocess
import time
import uuid

import pytest
import requests

from beams import random_token
from conftest import INSTANCE_ID, OTHER_INSTANCE_ID, OTHER_SECRET, SECRET, Mock, Server, write_apns_key

HEADER = json.dumps({"format": "push-server-devices", "version": 1})
IMPORT = f"/admin_api/v1/instances/{INSTANCE_ID}/devices/import"
AUDIT = f"/admin_api/v1/instances/{INSTANCE_ID}/audit"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Plain HTTP, two instances in one store."""
    directory = tmp_path_factory.mktemp("audit-imports")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, extra_instances=[{"id": OTHER_INSTANCE_ID, "secretKey": OTHER_SECRET}])
    yield server
    server.stop()
    mock.stop()


def call(server, method, path, key, request_id=None, **kwargs):
    headers = {"Authorization": f"Bearer {key}", **({"X-Request-ID": request_id} if request_id else {})}
    return requests.request(method, server.url(path), headers=headers, timeout=30, **kwargs)


def create_key(server, scopes, instance=INSTANCE_ID, secret=SECRET):
    r = call(server, "POST", f"/admin_api/v1/instances/{instance}/keys", secret,
             json={"label": "import audit", "scopes": scopes})
    assert r.status_code == 201, r.text
    return r.json()


def device_file(count, bad=0):
    lines = [HEADER] + [json.dumps({"platform": "apns", "token": random_token()}) for _ in range(count)]
    lines += [json.dumps({"platform": "apns", "token": "not-hex"}) for _ in range(bad)]
    return "\n".join(lines) + "\n"


def entries(server, key=SECRET, action=None):
    found, since = [], "0"
    while True:
        params = {"since": since, "limit": 1000, **({"action": action} if action else {})}
        r = call(server, "GET", AUDIT, key, params=params)
        assert r.status_code == 200, r.text
        found += r.json()["entries"]
        if r.json()["next"] is None:
            return found
        since = r.json()["next"]


def with_request_id(server, request_id, wait=False):
    """The entries with this request id (a refusal at admission is written by a task of its own: waited for)."""
    deadline = time.monotonic() + (10 if wait else 0)
    while True:
        found = [e for e in entries(server) if e["requestId"] == request_id]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def cli(server, *arguments, stdin=None, user="importer"):
    return subprocess.run([server.binary, *arguments, "--config", str(server.config_path)], input=stdin,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "USER": user})


def test_an_admin_route_import_appears_once_with_its_actor_counts_and_outcome(server):
    admin = create_key(server, ["instance:admin"])
    request_id = f"import-{uuid.uuid4().hex[:8]}"
    r = call(server, "POST", IMPORT, admin["key"], request_id, data=device_file(2, bad=1))
    assert r.status_code == 200 and (r.json()["created"], r.json()["refused"]) == (2, 1), r.text
    found = with_request_id(server, request_id)
    assert len(found) == 1, found
    entry = found[0]
    assert (entry["action"], entry["target"], entry["actor"], entry["source"]) == (
        "devices.import", INSTANCE_ID, admin["id"], "127.0.0.1"), entry
    assert entry["outcome"] == "success: created 2, updated 0, unchanged 0, refused 1", entry
    assert admin["key"].rsplit("_", 1)[1] not in json.dumps(found)

    dry_id = f"import-dry-{uuid.uuid4().hex[:8]}"
    r = call(server, "POST", IMPORT, admin["key"], dry_id, params={"dryRun": "true"}, data=device_file(3))
    assert r.status_code == 200 and r.json()["created"] == 3, r.text
    dry = with_request_id(server, dry_id)
    assert [e["outcome"] for e in dry] == [
        "success: created 3, updated 0, unchanged 0, refused 0 (dry run: nothing written)"], dry


def test_refused_and_failed_route_imports_are_audited_with_their_outcome(server):
    publisher = create_key(server, ["publish"])
    denied_id = f"import-denied-{uuid.uuid4().hex[:8]}"
    r = call(server, "POST", IMPORT, publisher["key"], denied_id, data=device_file(1))
    assert r.status_code == 403, r.text
    denied = with_request_id(server, denied_id, wait=True)
    assert [(e["action"], e["actor"], e["outcome"]) for e in denied] == [
        ("devices.import", publisher["id"], "denied")], denied

    bad_id = f"import-bad-{uuid.uuid4().hex[:8]}"
    r = call(server, "POST", IMPORT, SECRET, bad_id, data="hello\n")
    assert r.status_code == 400, r.text
    bad = with_request_id(server, bad_id)
    assert len(bad) == 1 and bad[0]["actor"] == "beams-secret", bad
    assert bad[0]["outcome"].startswith("failed: not a device file"), bad

    option_id = f"import-option-{uuid.uuid4().hex[:8]}"
    r = call(server, "POST", IMPORT, SECRET, option_id, params={"from": "nowhere"}, data="{}")
    assert r.status_code == 400, r.text
    option = with_request_id(server, option_id)
    assert [e["outcome"] for e in option] == ["failed: `from` must be parse, onesignal or sns"], option


def test_a_cli_import_in_several_batches_appears_once_with_the_user_and_its_counts(server):
    before = {e["seq"] for e in entries(server, action="devices.import")}
    result = cli(server, "import", "--instance", INSTANCE_ID, "--batch", "2", "-", stdin=device_file(5, bad=1))
    assert result.returncode == 1, result.stdout + result.stderr  # 1: a line was refused
    listed = cli(server, "audit", "list", "--instance", INSTANCE_ID, "--action", "devices.import")
    assert listed.returncode == 0, listed.stderr
    new = [json.loads(line) for line in listed.stdout.splitlines() if json.loads(line)["seq"] not in before]
    assert len(new) == 1, new
    assert (new[0]["actor"], new[0]["source"], new[0]["target"]) == ("cli:importer", "cli", INSTANCE_ID), new
    assert new[0]["outcome"] == "success: created 5, updated 0, unchanged 0, refused 1", new
    assert new[0]["requestId"].startswith("cli-"), new

    refused = cli(server, "import", "--instance", INSTANCE_ID, "-", stdin="not a device file\n")
    assert refused.returncode == 2, refused.stderr
    failed = [e for e in entries(server, action="devices.import") if e["seq"] not in before and e["seq"] != new[0]["seq"]]
    assert len(failed) == 1 and failed[0]["actor"] == "cli:importer", failed
    assert failed[0]["outcome"].startswith("failed: not a device file"), failed


def test_the_cli_lists_the_server_wide_log_with_entries_of_two_instances(server):
    mine = create_key(server, ["publish"])
    other = create_key(server, ["publish"], instance=OTHER_INSTANCE_ID, secret=OTHER_SECRET)
    listed = cli(server, "audit", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    created = {(e["instanceId"], e["target"]) for e in lines if e["action"] == "key.create"}
    assert {(INSTANCE_ID, mine["id"]), (OTHER_INSTANCE_ID, other["id"])} <= created, created
    seqs = [int(e["seq"]) for e in lines]
    assert seqs == sorted(seqs)

    only = cli(server, "audit", "list", "--action", "key.create", "--limit", "1000")
    assert only.returncode == 0, only.stderr
    only_lines = [json.loads(line) for line in only.stdout.splitlines()]
    assert only_lines and {e["action"] for e in only_lines} == {"key.create"}
    assert {e["instanceId"] for e in only_lines} == {INSTANCE_ID, OTHER_INSTANCE_ID}
    paged = cli(server, "audit", "list", "--action", "key.create", "--since", only_lines[0]["seq"], "--limit", "1")
    assert [json.loads(line)["seq"] for line in paged.stdout.splitlines()] == [only_lines[1]["seq"]]
