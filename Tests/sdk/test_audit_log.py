"""The audit log end to end (docs/OPERATIONS.md, "Many apps: audit log"): each change through the admin, customer
and publish APIs and the `push-server keys` CLI appears exactly once with its actor (a key id, never the key),
source address and request id; refused changes appear as `denied` without the presented key; a publish-only key
cannot read the log (403 naming `instance:admin`); and no route changes it."""
import datetime
import json
import os
import subprocess
import uuid

import pytest
import requests

from conftest import INSTANCE_ID, SECRET

ENCRYPTION_KEY = "test-key-encryption-key-0123456789abcdef"
BASE = f"/admin_api/v1/instances/{INSTANCE_ID}"
AUDIT = f"{BASE}/audit"
PUBLISHES = f"/publish_api/v1/instances/{INSTANCE_ID}/publishes"


@pytest.fixture(scope="module")
def audited(environment):
    mock = environment.mock()
    return environment.server(mock, overrides={"keys": {"encryptionKey": ENCRYPTION_KEY}}, name="audited")


def call(server, method, path, key, request_id=None, **kwargs):
    headers = {"Authorization": f"Bearer {key}"}
    if request_id:
        headers["X-Request-ID"] = request_id
    return requests.request(method, server.url(path), headers=headers, verify=server.cert, timeout=10, **kwargs)


def create_key(server, scopes, key=SECRET, request_id=None):
    r = call(server, "POST", f"{BASE}/keys", key, request_id, json={"label": "audit test", "scopes": scopes})
    assert r.status_code == 201, r.text
    return r.json()


def audit_entries(server, key):
    entries, since = [], 0
    while True:
        r = call(server, "GET", f"{AUDIT}?since={since}&limit=50", key)
        assert r.status_code == 200, r.text
        body = r.json()
        entries += body["entries"]
        if body["next"] is None:
            return entries
        since = body["next"]


def scheduled_publish(server, key):
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    body = {"interests": ["audit-later"], "apns": {"aps": {"alert": "later"}},
            "x_delivery": {"sendAt": at.strftime("%Y-%m-%dT%H:%M:%SZ")}}
    r = call(server, "POST", PUBLISHES, key, json=body)
    assert r.status_code == 200, r.text
    return r.json()["publishId"]


def test_each_change_appears_once_with_its_actor_source_and_request_id(audited):
    admin = create_key(audited, ["instance:admin", "customer", "publish"])
    key, admin_id = admin["key"], admin["id"]
    ids = {name: f"audit-{name}-{uuid.uuid4().hex[:8]}" for name in
           ("create", "roll", "revoke", "beams", "user", "cancel")}
    made = create_key(audited, ["publish"], key=key, request_id=ids["create"])
    rolled = call(audited, "POST", f"{BASE}/keys/{made['id']}/roll", key, ids["roll"], json={"expiresIn": "now"})
    assert rolled.status_code == 201, rolled.text
    revoked = call(audited, "DELETE", f"{BASE}/keys/{rolled.json()['id']}", key, ids["revoke"])
    assert revoked.status_code == 200, revoked.text
    beams = call(audited, "POST", f"{BASE}/beams-secret/roll", key, ids["beams"], json={"expiresIn": "24h"})
    assert beams.status_code == 201, beams.text
    user = call(audited, "DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/audited-user", key, ids["user"])
    assert user.status_code == 200, user.text
    publish_id = scheduled_publish(audited, key)
    cancel = call(audited, "DELETE", f"{PUBLISHES}/{publish_id}", key, ids["cancel"])
    assert cancel.status_code == 200, cancel.text

    entries = audit_entries(audited, key)
    expected = {
        "create": ("key.create", made["id"]),
        "roll": ("key.roll", made["id"]),
        "revoke": ("key.revoke", rolled.json()["id"]),
        "beams": ("beams_secret.roll", "beams-initial"),
        "user": ("user.delete", "audited-user"),
        "cancel": ("publish.cancel", publish_id),
    }
    for name, (action, target) in expected.items():
        found = [e for e in entries if e["requestId"] == ids[name]]
        assert len(found) == 1, (name, found)
        entry = found[0]
        assert (entry["action"], entry["target"], entry["outcome"]) == (action, target, "success"), entry
        assert entry["actor"] == admin_id and entry["source"] == "127.0.0.1", entry
        assert entry["time"].endswith("Z")
    # The admin key itself was made with the Beams secret.
    made_admin = [e for e in entries if e["action"] == "key.create" and e["target"] == admin_id]
    assert len(made_admin) == 1 and made_admin[0]["actor"] == "beams-secret"
    text = json.dumps(entries)
    assert key.rsplit("_", 1)[1] not in text and SECRET not in text and beams.json()["secretKey"] not in text
    seqs = [int(e["seq"]) for e in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_refused_changes_are_recorded_as_denied_without_the_key(audited):
    admin = create_key(audited, ["instance:admin"])
    publisher = create_key(audited, ["publish"])
    request_id = f"audit-denied-{uuid.uuid4().hex[:8]}"
    r = call(audited, "DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/someone", publisher["key"],
             request_id)
    assert r.status_code == 403
    wrong = "psk_aaaaaaaaaaaa_" + "B" * 43
    wrong_id = f"audit-wrong-{uuid.uuid4().hex[:8]}"
    assert call(audited, "POST", f"{BASE}/keys", wrong, wrong_id, json={}).status_code == 401
    entries = audit_entries(audited, admin["key"])
    denied = [e for e in entries if e["requestId"] == request_id]
    assert len(denied) == 1
    assert (denied[0]["action"], denied[0]["actor"], denied[0]["outcome"]) == (
        "user.delete", publisher["id"], "denied")
    unknown = [e for e in entries if e["requestId"] == wrong_id]
    assert len(unknown) == 1 and unknown[0]["outcome"] == "denied" and unknown[0]["actor"] == "aaaaaaaaaaaa"
    assert "B" * 43 not in json.dumps(entries)


def test_a_publish_only_key_cannot_read_the_audit_log(audited):
    publisher = create_key(audited, ["publish"])
    r = call(audited, "GET", AUDIT, publisher["key"])
    assert r.status_code == 403
    assert r.json() == {"error": "Forbidden", "description": "This key lacks the `instance:admin` scope"}


def test_the_audit_log_cannot_be_changed_through_the_api(audited):
    before = audit_entries(audited, SECRET)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        r = call(audited, method, AUDIT, SECRET, json={"entries": []})
        assert r.status_code in (404, 405), (method, r.status_code, r.text)
        r = call(audited, method, f"{AUDIT}/{before[0]['seq']}", SECRET)
        assert r.status_code in (404, 405), (method, r.status_code, r.text)
    assert audit_entries(audited, SECRET)[:len(before)] == before
    too_many = call(audited, "GET", f"{AUDIT}?limit=100000", SECRET)
    assert too_many.status_code == 400 and "limit" in too_many.text, "the page size is bounded"


def test_cli_key_changes_are_audited_with_the_user_and_listed_by_the_cli(audited):
    def cli(command, *args):
        return subprocess.run([audited.binary, command, *args, "--config", str(audited.config_path), "--instance",
                               INSTANCE_ID], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "USER": "auditor"})
    made = cli("keys", "create", "--label", "cli", "--scopes", "publish")
    assert made.returncode == 0, made.stderr
    key_id = made.stdout.strip().split("_")[1]
    listed = cli("audit", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    mine = [e for e in lines if e["action"] == "key.create" and e["target"] == key_id]
    assert len(mine) == 1 and mine[0]["actor"] == "cli:auditor" and mine[0]["source"] == "cli", mine
    assert made.stdout.strip() not in listed.stdout
