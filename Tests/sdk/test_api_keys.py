"""Scoped keys and rotation end to end (docs/OPERATIONS.md, "Many apps: keys and rotation"): scopes answered 403
naming the missing scope, rolled and revoked keys refused after their time, the Beams secret rolled with an overlap
(old user tokens keep binding, the official Python SDK works with the new secret and, during the overlap, the old),
and `push-server keys` changing the store under a running server."""
import subprocess
import time
import uuid

import pytest
import requests
from pusher_push_notifications import PushNotifications, PusherAuthError

from conftest import INSTANCE_ID, SECRET

ENCRYPTION_KEY = "test-key-encryption-key-0123456789abcdef"
BASE = f"/admin_api/v1/instances/{INSTANCE_ID}"
PUBLISHES = f"/publish_api/v1/instances/{INSTANCE_ID}/publishes"
PUBLISH_BODY = {"interests": ["keys-news"], "apns": {"aps": {"alert": "hi"}}}


@pytest.fixture(scope="module")
def keyed(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"keys": {"encryptionKey": ENCRYPTION_KEY}}, name="keyed")
    return server


def call(server, method, path, key, **kwargs):
    return requests.request(method, server.url(path), headers={"Authorization": f"Bearer {key}"},
                            verify=server.cert, timeout=10, **kwargs)


def create_key(server, scopes, label="test key", key=SECRET, **fields):
    r = call(server, "POST", f"{BASE}/keys", key, json={"label": label, "scopes": scopes, **fields})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["key"].startswith("psk_") and body["id"] in body["key"]
    return body


def publish(server, key):
    return call(server, "POST", PUBLISHES, key, json=PUBLISH_BODY)


def wait_for_status(predicate, timeout=10):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value or time.time() > deadline:
            return value
        time.sleep(0.1)


def test_publish_only_key_cannot_read_statuses_or_delete_users(keyed):
    key = create_key(keyed, ["publish"])["key"]
    r = publish(keyed, key)
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    status = call(keyed, "GET", f"{PUBLISHES}/{publish_id}", key)
    assert status.status_code == 403
    assert status.json() == {"error": "Forbidden", "description": "This key lacks the `publish:read` scope"}
    delete = call(keyed, "DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/someone", key)
    assert delete.status_code == 403
    assert "`customer`" in delete.json()["description"]
    listing = call(keyed, "GET", f"{BASE}/keys", key)
    assert listing.status_code == 403 and "`instance:admin`" in listing.json()["description"]
    device = call(keyed, "GET", f"{BASE}/devices/{uuid.uuid4()}", key)
    assert device.status_code == 403 and "`devices:read`" in device.json()["description"]
    # The Beams secret still reads the status (full rights by default).
    assert call(keyed, "GET", f"{PUBLISHES}/{publish_id}", SECRET).status_code == 200


def test_unknown_or_malformed_keys_get_401_in_the_beams_shape(keyed):
    real = create_key(keyed, ["publish"])["key"]
    wrong_secret = real[:-1] + ("A" if real[-1] != "A" else "B")
    for key in (wrong_secret, "psk_aaaaaaaaaaaa_" + "A" * 43, "psk_short"):
        r = publish(keyed, key)
        assert r.status_code == 401, (key, r.text)
        assert r.json() == {"error": "Unauthorized", "description": "Incorrect API Key"}
    r = publish(keyed, "not-the-secret-" + "x" * 30)
    assert r.status_code == 401 and r.json()["description"] == "Incorrect Secret Key"


def test_key_list_never_shows_a_secret_or_digest(keyed):
    created = create_key(keyed, ["publish:read", "devices:read"], label="support desk")
    r = call(keyed, "GET", f"{BASE}/keys", SECRET)
    assert r.status_code == 200, r.text
    text = r.text
    secret_part = created["key"].rsplit("_", 1)[1]
    assert secret_part not in text and SECRET not in text
    listed = next(k for k in r.json()["keys"] if k["id"] == created["id"])
    assert listed["label"] == "support desk"
    assert listed["scopes"] == ["publish:read", "devices:read"]
    assert set(listed) >= {"createdAt", "expiresAt", "notBefore", "lastUsedAt", "revokedAt"}
    assert "key" not in listed and "secretDigest" not in listed
    assert r.json()["beamsSecret"]["source"] == "config"


def test_last_use_is_recorded(keyed):
    created = create_key(keyed, ["publish"])
    assert publish(keyed, created["key"]).status_code == 200

    def last_used():
        keys = call(keyed, "GET", f"{BASE}/keys", SECRET).json()["keys"]
        return next(k for k in keys if k["id"] == created["id"])["lastUsedAt"]
    assert wait_for_status(last_used), "lastUsedAt was not written"


def test_rolled_key_works_until_its_expiry_then_gets_401(keyed):
    old = create_key(keyed, ["publish"], label="backend")
    r = call(keyed, "POST", f"{BASE}/keys/{old['id']}/roll", SECRET, json={"expiresIn": "3s"})
    assert r.status_code == 201, r.text
    new = r.json()
    assert new["key"] != old["key"] and new["rotatedFrom"] == old["id"] and new["scopes"] == ["publish"]
    rolled_at = time.time()
    assert publish(keyed, old["key"]).status_code == 200, "the old key works during the overlap"
    assert publish(keyed, new["key"]).status_code == 200
    # Past the expiry (plus the one-second key cache), the old key is refused and says why.
    time.sleep(max(0.0, rolled_at + 4.5 - time.time()))
    refused = publish(keyed, old["key"])
    assert refused.status_code == 401
    assert refused.json() == {"error": "Unauthorized", "description": "API key expired"}
    assert publish(keyed, new["key"]).status_code == 200


def test_revoked_key_is_refused_and_not_before_is_honoured(keyed):
    created = create_key(keyed, ["publish"])
    assert publish(keyed, created["key"]).status_code == 200
    r = call(keyed, "DELETE", f"{BASE}/keys/{created['id']}", SECRET)
    assert r.status_code == 200 and r.json()["revokedAt"]
    refused = publish(keyed, created["key"])
    assert refused.status_code == 401 and refused.json()["description"] == "API key revoked"
    later = create_key(keyed, ["publish"], notBefore="2999-01-01T00:00:00Z")
    r = publish(keyed, later["key"])
    assert r.status_code == 401 and r.json()["description"] == "API key not valid yet"


def test_admin_key_manages_keys_and_bad_requests_are_refused(keyed):
    admin = create_key(keyed, ["instance:admin"])["key"]
    made = create_key(keyed, ["customer"], key=admin)
    assert call(keyed, "DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/nobody", made["key"]).status_code == 200
    bad = call(keyed, "POST", f"{BASE}/keys", admin, json={"label": "x", "scopes": ["publish", "everything"]})
    assert bad.status_code == 422 and "everything" in bad.json()["description"]
    assert call(keyed, "POST", f"{BASE}/keys/nosuchkey000/roll", admin, json={}).status_code == 404
    assert call(keyed, "POST", f"{BASE}/keys/{made['id']}/roll", admin,
                json={"expiresIn": "1w"}).status_code == 422


def sdk(server, secret):
    client = PushNotifications(instance_id=INSTANCE_ID, secret_key=secret, endpoint=f"localhost:{server.port}")
    client.session.verify = server.cert
    return client


def register(server):
    r = requests.post(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"),
                      json={"token": uuid.uuid4().hex + uuid.uuid4().hex, "bundleIdentifier": "com.example.keys"},
                      verify=server.cert, timeout=5)
    assert r.status_code == 200, r.text
    return r.json()["id"]


def bind(server, device_id, token):
    return requests.put(server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns/{device_id}/user"),
                        headers={"Authorization": f"Bearer {token}"}, verify=server.cert, timeout=5)


def test_rolled_beams_secret_keeps_old_user_tokens_and_the_sdk_works_with_both(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"keys": {"encryptionKey": ENCRYPTION_KEY}}, name="beams-roll")
    old_token = sdk(server, SECRET).generate_token("rolled-user")["token"]
    r = call(server, "POST", f"{BASE}/beams-secret/roll", SECRET, json={"expiresIn": "24h"})
    assert r.status_code == 201, r.text
    new_secret = r.json()["secretKey"]
    assert new_secret != SECRET and len(new_secret) >= 32
    # The official SDK, unchanged, publishes with the new secret and, during the overlap, the old one.
    assert sdk(server, new_secret).publish_to_interests(["keys-news"], {"apns": {"aps": {"alert": "new"}}})["publishId"]
    assert sdk(server, SECRET).publish_to_interests(["keys-news"], {"apns": {"aps": {"alert": "old"}}})["publishId"]
    # A user token issued before the roll (signed with the old secret) still binds; one from the new secret too.
    assert bind(server, register(server), old_token).status_code == 200
    new_token = sdk(server, new_secret).generate_token("rolled-user-2")["token"]
    assert bind(server, register(server), new_token).status_code == 200
    listing = call(server, "GET", f"{BASE}/keys", new_secret).json()
    assert listing["beamsSecret"]["source"] == "store"
    assert new_secret not in str(listing) and SECRET not in str(listing)
    # The rolled secret is stored (sealed), so a restart keeps it.
    server.stop()
    server.start()
    assert publish(server, new_secret).status_code == 200
    assert publish(server, SECRET).status_code == 200, "the overlap survives the restart"


def test_beams_secret_after_a_short_overlap_is_refused_for_bearer_and_user_tokens(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"keys": {"encryptionKey": ENCRYPTION_KEY}}, name="beams-short")
    old_token = sdk(server, SECRET).generate_token("short-user")["token"]
    r = call(server, "POST", f"{BASE}/beams-secret/roll", SECRET, json={"expiresIn": "2s"})
    assert r.status_code == 201, r.text
    rolled_at = time.time()
    new_secret = r.json()["secretKey"]
    time.sleep(max(0.0, rolled_at + 3.5 - time.time()))
    with pytest.raises(PusherAuthError):
        sdk(server, SECRET).publish_to_interests(["keys-news"], {"apns": {"aps": {"alert": "old"}}})
    refused = bind(server, register(server), old_token)
    assert refused.status_code == 401 and "signature" in refused.json()["description"]
    assert sdk(server, new_secret).publish_to_interests(["keys-news"], {"apns": {"aps": {"alert": "new"}}})["publishId"]


def test_beams_secret_roll_without_an_encryption_key_is_refused(env):
    server, _ = env
    r = call(server, "POST", f"{BASE}/beams-secret/roll", SECRET, json={})
    assert r.status_code == 409 and "keys.encryptionKey" in r.json()["description"]
    assert publish(server, SECRET).status_code == 200


def test_narrowed_beams_secret_cannot_manage_keys(environment):
    mock = environment.mock()
    narrowed = ["publish", "publish:read", "customer", "devices:read", "console"]
    server = environment.server(mock, instance_overrides={"beamsSecretScopes": narrowed}, name="narrowed")
    r = call(server, "GET", f"{BASE}/keys", SECRET)
    assert r.status_code == 403 and "`instance:admin`" in r.json()["description"]
    assert publish(server, SECRET).status_code == 200


def test_keys_cli_changes_are_seen_by_the_running_server(keyed):
    def cli(*args):
        return subprocess.run([keyed.binary, "keys", *args, "--config", str(keyed.config_path), "--instance",
                               INSTANCE_ID], capture_output=True, text=True, timeout=60)
    made = cli("create", "--label", "from the cli", "--scopes", "publish,publish:read", "--expires-in", "7d")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("psk_")
    assert wait_for_status(lambda: publish(keyed, key).status_code == 200, timeout=20)
    listed = cli("list")
    assert listed.returncode == 0 and key not in listed.stdout and "from the cli" in listed.stdout
    key_id = key.split("_")[1]
    revoked = cli("revoke", "--key", key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert wait_for_status(lambda: publish(keyed, key).status_code == 401, timeout=20)
    assert cli("revoke", "--key", "nosuchkey000").returncode == 1
    assert cli("create", "--label", "x", "--scopes", "everything").returncode == 2


def test_console_key_signs_in_but_a_test_push_also_needs_publish(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides={"console": {"enabled": True}}, name="console-keys")
    console_only = create_key(server, ["console"])["key"]
    overview = call(server, "GET", f"{BASE}/console/overview", console_only)
    assert overview.status_code == 200, overview.text
    push = call(server, "POST", f"{BASE}/console/test-push", console_only, json={"deviceToken": "ab" * 32})
    assert push.status_code == 403 and "`publish`" in push.json()["description"]
    publish_only = create_key(server, ["publish"])["key"]
    refused = call(server, "GET", f"{BASE}/console/overview", publish_only)
    assert refused.status_code == 403 and "`console`" in refused.json()["description"]
