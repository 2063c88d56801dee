"""Run-time instances end to end (docs/OPERATIONS.md "Many apps: run-time instances"; docs/API.md "Server admin
API"): server-admin keys only, an instance created through the API serves devices and publishes to the strict APNs
mock at once, a definition with errors is refused whole, config-file instances are read-only and never shadowed,
a deleted instance answers 404 at once, a quota change applies without a restart, every change is audited once
with its actor, the CLI manages the same set, and SIGHUP reloads the config file (a bad file keeps the old one)."""
import json
import os
import signal
import subprocess
import uuid

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, KEY_ID, SECRET, TEAM_ID, TOPIC

ADMIN_KEY = "admin-key-for-run-time-instances-0123456789"
ENCRYPTION_KEY = "instances-key-encryption-key-0123456789abcdef"
SERVER = "/admin_api/v1/server"


def admin_config():
    return {"keys": {"encryptionKey": ENCRYPTION_KEY}, "admin": {"keys": [{"id": "ops", "key": ADMIN_KEY}]},
            "limits": {"ipRequestsPerSecond": 0, "authFailuresPerIP": 0}}


@pytest.fixture(scope="module")
def served(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides=admin_config(), name="runtime-instances")
    return environment, mock, server


def call(server, method, path, key=ADMIN_KEY, **kwargs):
    headers = kwargs.pop("headers", {})
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return requests.request(method, server.url(path), headers=headers, verify=server.cert, timeout=10, **kwargs)


def definition(environment, mock, instance_id=None, **extra):
    apns = {"teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(environment.p8), "topic": TOPIC,
            "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{mock.port}",
            "caFile": mock.ca_file}
    body = {"id": instance_id or str(uuid.uuid4()), "secretKey": "runtime-secret-" + uuid.uuid4().hex, "apns": apns}
    body.update(extra)
    return body


def audit(server, since=0):
    r = call(server, "GET", f"{SERVER}/audit", params={"since": since, "limit": 1000})
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def metric(server, name):
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def test_only_a_server_admin_key_opens_the_admin_api(served):
    _, _, server = served
    assert call(server, "GET", f"{SERVER}/instances", key=None).status_code == 400
    wrong = call(server, "GET", f"{SERVER}/instances", key="not-the-admin-key-0123456789abcdef")
    assert wrong.status_code == 401 and wrong.json() == {"error": "Unauthorized",
                                                         "description": "Incorrect server-admin key"}, wrong.text
    # An instance's Beams secret (which holds instance:admin) is not a server-admin key.
    assert call(server, "GET", f"{SERVER}/instances", key=SECRET).status_code == 401
    listed = call(server, "GET", f"{SERVER}/instances")
    assert listed.status_code == 200, listed.text
    assert {"id": INSTANCE_ID, "source": "config"} in listed.json()["instances"]
    assert ADMIN_KEY not in server.log_path.read_text(), "the admin key must never be logged"


def test_a_created_instance_serves_devices_and_publishes_at_once_and_its_secrets_are_masked(served):
    environment, mock, server = served
    body = definition(environment, mock)
    r = call(server, "POST", f"{SERVER}/instances", json=body)
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["id"] == body["id"] and created["source"] == "store"
    assert created["definition"]["secretKey"] == "********" and "secretKey" not in created
    shown = call(server, "GET", f"{SERVER}/instances/{body['id']}")
    assert shown.status_code == 200 and shown.json()["definition"]["secretKey"] == "********", shown.text
    assert shown.headers["ETag"] == f'"{created["version"]}"'
    assert body["secretKey"] not in json.dumps(call(server, "GET", f"{SERVER}/instances").json())

    client = Beams(server, body["id"], body["secretKey"])
    token = random_token()
    interest = unique("runtime")
    client.register(token, [interest])
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("hello run time")})
    assert client.wait_finished(publish_id)["apns"]["accepted"] == 1
    assert len(mock.requests_for(token)) == 1


def test_a_create_without_id_or_secret_gets_both_and_the_secret_is_shown_once(served):
    environment, mock, server = served
    body = definition(environment, mock)
    del body["id"], body["secretKey"]
    r = call(server, "POST", f"{SERVER}/instances", json=body)
    assert r.status_code == 201, r.text
    created = r.json()
    secret, instance_id = created["secretKey"], created["id"]
    assert len(secret) >= 32 and uuid.UUID(instance_id)
    assert secret not in call(server, "GET", f"{SERVER}/instances/{instance_id}").text
    Beams(server, instance_id, secret).register(random_token())


def test_an_invalid_change_is_refused_whole_with_every_reason_and_nothing_changes(served):
    environment, mock, server = served
    body = definition(environment, mock, quotas={"devices": 5})
    created = call(server, "POST", f"{SERVER}/instances", json=body).json()
    before = call(server, "GET", f"{SERVER}/instances/{body['id']}").json()
    # A valid quota change together with two errors: none of it applies.
    r = call(server, "PATCH", f"{SERVER}/instances/{body['id']}",
             json={"quotas": {"devices": 1}, "apns": {"keyPath": "/nonexistent/AuthKey.p8"}, "publishWeight": 0})
    assert r.status_code == 422, r.text
    description = r.json()["description"]
    assert r.json()["error"] == "Invalid instance"
    assert "instance.apns.keyPath: file not found (/nonexistent/AuthKey.p8)" in description, description
    assert "instance.publishWeight: must be between 1 and 100, got 0" in description, description
    after = call(server, "GET", f"{SERVER}/instances/{body['id']}").json()
    assert after == before, "a refused change must leave the stored definition as it was"
    assert after["version"] == created["version"]
    # The old quota still applies: five devices register.
    client = Beams(server, body["id"], body["secretKey"])
    for _ in range(5):
        client.register(random_token())
    refused = [e for e in audit(server) if e["target"] == body["id"] and e["action"] == "instance.update"]
    assert [e["outcome"] for e in refused] == ["refused:invalid"], refused


def test_config_instances_are_read_only_and_ids_never_collide(served):
    environment, mock, server = served
    for method in ("PUT", "PATCH"):
        r = call(server, method, f"{SERVER}/instances/{INSTANCE_ID}", json={"quotas": {"devices": 1}})
        assert r.status_code == 409 and r.json()["error"] == "Instance is read-only", r.text
        assert "config file" in r.json()["description"]
    r = call(server, "DELETE", f"{SERVER}/instances/{INSTANCE_ID}")
    assert r.status_code == 409 and r.json()["error"] == "Instance is read-only", r.text
    collide = call(server, "POST", f"{SERVER}/instances", json=definition(environment, mock, INSTANCE_ID))
    assert collide.status_code == 409 and collide.json()["error"] == "Instance exists", collide.text
    body = definition(environment, mock)
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    again = call(server, "POST", f"{SERVER}/instances", json=definition(environment, mock, body["id"].upper()))
    assert again.status_code == 409 and again.json()["error"] == "Instance exists", again.text
    # The config instance still works with its own secret.
    Beams(server).register(random_token())


def test_a_deleted_instance_answers_404_at_once_and_its_id_can_be_used_again(served):
    environment, mock, server = served
    body = definition(environment, mock)
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    client = Beams(server, body["id"], body["secretKey"])
    client.register(random_token())
    assert call(server, "DELETE", f"{SERVER}/instances/{body['id']}").status_code == 200
    r = client.publish_raw("/interests", {"interests": ["x"], "apns": alert("gone")})
    assert r.status_code == 404 and r.json() == {"error": "Instance not found",
                                                 "description": "Could not find the instance"}, r.text
    r = client.session.post(server.url(f"/device_api/v1/instances/{body['id']}/devices/apns"),
                            json={"token": random_token(), "bundleIdentifier": TOPIC}, timeout=10)
    assert r.status_code == 404, r.text
    assert call(server, "GET", f"{SERVER}/instances/{body['id']}").status_code == 404
    assert call(server, "DELETE", f"{SERVER}/instances/{body['id']}").status_code == 404
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    client.register(random_token())


def test_a_quota_change_applies_without_a_restart_and_if_match_guards_it(served):
    environment, mock, server = served
    body = definition(environment, mock)
    created = call(server, "POST", f"{SERVER}/instances", json=body).json()
    client = Beams(server, body["id"], body["secretKey"])
    client.register(random_token())
    client.register(random_token())
    stale = call(server, "PATCH", f"{SERVER}/instances/{body['id']}", json={"quotas": {"devices": 2}},
                 headers={"If-Match": '"999999"'})
    assert stale.status_code == 412, stale.text
    r = call(server, "PATCH", f"{SERVER}/instances/{body['id']}", json={"quotas": {"devices": 2}},
             headers={"If-Match": f'"{created["version"]}"'})
    assert r.status_code == 200, r.text
    assert r.json()["definition"]["quotas"] == {"devices": 2}
    assert r.json()["definition"]["secretKey"] == "********", "a merge keeps the stored secret"
    refused = client.session.post(server.url(f"/device_api/v1/instances/{body['id']}/devices/apns"),
                                  json={"token": random_token(), "bundleIdentifier": TOPIC}, timeout=10)
    assert refused.status_code == 400 and "quota of 2 devices" in refused.text, refused.text
    # The secret kept by the merge still authenticates.
    assert client.publish_raw("/interests", {"interests": ["q"], "apns": alert("q")}).status_code == 200
    # /metrics follows the served set: the run-time instance's quota and usage appear (read every 5 s).
    label = f'beams_instance="{body["id"]}",quota="devices"'

    def quota_series():
        text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
        return {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if label in line}

    wait_for(lambda: quota_series().get("push_quota_limit") == 2 and quota_series().get("push_quota_usage") == 2,
             timeout=15, message="push_quota_limit/usage never showed the run-time instance's quota")


def test_a_deleted_instance_takes_its_metric_series_with_it(served):
    environment, mock, server = served
    body = definition(environment, mock, quotas={"devices": 10, "notificationsPerMinute": {"apns": 600}})
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    label = f'beams_instance="{body["id"]}"'

    def families():
        text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
        return {line.split("{")[0] for line in text.splitlines() if label in line}

    wanted = {"push_quota_limit", "push_quota_usage", "push_delivery_budget_per_minute"}
    wait_for(lambda: wanted <= families(), timeout=15, message="the instance's series never appeared")
    assert call(server, "DELETE", f"{SERVER}/instances/{body['id']}").status_code == 200
    assert families() == set(), "a deleted instance's series must go with it"


def test_every_change_appears_once_in_the_audit_log_with_its_actor(served):
    environment, mock, server = served
    start = audit(server)[-1]["seq"] if audit(server) else "0"
    body = definition(environment, mock)
    call(server, "POST", f"{SERVER}/instances", json=body, headers={"X-Request-Id": "create-1"})
    call(server, "PATCH", f"{SERVER}/instances/{body['id']}", json={"publishWeight": 3})
    call(server, "DELETE", f"{SERVER}/instances/{body['id']}")
    call(server, "DELETE", f"{SERVER}/instances/{body['id']}", key="wrong-admin-key-0123456789abcdefghij")
    entries = [e for e in audit(server, since=start) if e["target"] == body["id"]]
    assert [(e["action"], e["actor"], e["outcome"]) for e in entries] == [
        ("instance.create", "admin:ops", "success"),
        ("instance.update", "admin:ops", "success"),
        ("instance.delete", "admin:ops", "success"),
        ("instance.delete", "unknown", "denied"),
    ], entries
    assert all(e["instanceId"] == body["id"] for e in entries)
    assert ADMIN_KEY not in json.dumps(entries)
    # The per-instance audit route shows the same entries (the instance's admin reads its own history).
    per_instance = requests.get(server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/audit"),
                                headers={"Authorization": f"Bearer {SECRET}"}, verify=server.cert, timeout=10)
    assert per_instance.status_code == 200


def test_the_cli_creates_lists_and_deletes_instances_beside_the_running_server(served):
    environment, mock, server = served
    body = definition(environment, mock)
    path = server.directory / "cli-definition.json"
    path.write_text(json.dumps(body))

    def cli(*args, stdin=None):
        return subprocess.run([server.binary, "instances", *args, "--config", str(server.config_path)],
                              capture_output=True, text=True, timeout=60, input=stdin)

    created = cli("create", "--definition", str(path))
    assert created.returncode == 0, created.stderr
    client = Beams(server, body["id"], body["secretKey"])
    wait_for(lambda: client.session.post(server.url(f"/device_api/v1/instances/{body['id']}/devices/apns"),
                                         json={"token": random_token(), "bundleIdentifier": TOPIC},
                                         timeout=10).status_code == 200,
             timeout=20, message="the server never served the instance the CLI created")
    listed = [json.loads(line) for line in cli("list").stdout.splitlines()]
    assert any(i["id"] == body["id"] and i["definition"]["secretKey"] == "********" for i in listed), listed
    keys = subprocess.run([server.binary, "keys", "create", "--config", str(server.config_path), "--instance",
                           body["id"], "--label", "cli", "--scopes", "publish"], capture_output=True, text=True, timeout=60)
    assert keys.returncode == 0 and keys.stdout.startswith("psk_"), keys.stderr
    scoped = keys.stdout.strip()
    wait_for(lambda: client.publish_raw("/interests", {"interests": ["k"], "apns": alert("k")},
                                        secret=scoped).status_code == 200,
             timeout=20, message="a key the CLI made for a run-time instance never worked")
    bad = cli("update", "--instance", body["id"], "--definition", "-", stdin='{"publishWeight": 500}')
    assert bad.returncode == 1 and "instance.publishWeight: must be between 1 and 100" in bad.stderr, bad.stderr
    readonly = cli("delete", "--instance", INSTANCE_ID)
    assert readonly.returncode == 1 and "config file" in readonly.stderr, readonly.stderr
    assert cli("delete", "--instance", body["id"]).returncode == 0
    wait_for(lambda: client.publish_raw("/interests", {"interests": ["x"], "apns": alert("x")}).status_code == 404,
             timeout=20, message="the server kept serving the instance the CLI deleted")
    actors = {e["actor"] for e in audit(server) if e["target"] == body["id"]}
    assert len(actors) == 1 and actors.pop().startswith("cli:"), actors


def test_every_command_that_takes_an_instance_finds_a_run_time_one(served):
    environment, mock, server = served
    body = definition(environment, mock)
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    client = Beams(server, body["id"], body["secretKey"])
    token = random_token()
    device_id = client.register(token, ["cli"])

    def cli(*args, stdin=None):
        return subprocess.run([server.binary, *args, "--config", str(server.config_path)], input=stdin,
                              capture_output=True, text=True, timeout=60, env={**os.environ, "USER": "operator"})

    exported = cli("export", "--instance", body["id"])
    assert exported.returncode == 0, exported.stderr
    assert [json.loads(line).get("token") for line in exported.stdout.splitlines()][1:-1] == [token]
    added = random_token()
    device_line = json.dumps({"platform": "apns", "token": added, "interests": ["cli"]})
    imported = cli("import", "--instance", body["id"].upper(), "-",
                   stdin=exported.stdout.splitlines()[0] + "\n" + device_line + "\n")
    assert imported.returncode == 0 and "created 1" in imported.stdout, imported.stdout + imported.stderr
    listed = cli("audit", "list", "--instance", body["id"])
    assert listed.returncode == 0, listed.stderr
    actions = [(e["action"], e["actor"]) for e in map(json.loads, listed.stdout.splitlines())]
    assert actions == [("instance.create", "admin:ops"), ("devices.import", "cli:operator")], actions
    # A user token the CLI signs with the stored secret binds a user.
    signed = cli("token", "--instance", body["id"], "--user", "alice")
    assert signed.returncode == 0, signed.stderr
    r = client.session.put(server.url(f"/device_api/v1/instances/{body['id']}/devices/apns/{device_id}/user"),
                           headers={"Authorization": f"Bearer {signed.stdout.strip()}"}, timeout=10)
    assert r.status_code == 200, r.text
    # `send` uses the stored definition's APNs key and endpoint (the strict mock).
    sent = cli("send", "--instance", body["id"], "--device-token", added, "--alert", "from send")
    assert sent.returncode == 0 and "status: 200" in sent.stdout, sent.stdout + sent.stderr
    assert [r["payload"]["aps"]["alert"] for r in mock.requests_for(added)] == ["from send"]
    unknown = cli("export", "--instance", str(uuid.uuid4()))
    assert unknown.returncode == 2 and "in the config or the store" in unknown.stderr, unknown.stderr


def test_sighup_with_a_good_file_adds_an_instance_and_a_bad_file_keeps_the_old_config(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides=admin_config(), name="sighup")
    assert metric(server, "push_config_reload_success") == 1
    config = json.loads(server.config_path.read_text())
    added = definition(environment, mock)
    config["instances"].append(added)
    server.config_path.write_text(json.dumps(config))
    before = metric(server, "push_config_reload_timestamp_seconds")
    server.proc.send_signal(signal.SIGHUP)
    client = Beams(server, added["id"], added["secretKey"])
    wait_for(lambda: client.session.post(server.url(f"/device_api/v1/instances/{added['id']}/devices/apns"),
                                         json={"token": random_token(), "bundleIdentifier": TOPIC},
                                         timeout=10).status_code == 200,
             timeout=10, message="SIGHUP never added the instance")
    token, interest = random_token(), unique("hup")
    client.register(token, [interest])
    assert client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert("hup")}))
    assert metric(server, "push_config_reload_success") == 1
    assert metric(server, "push_config_reload_timestamp_seconds") >= before
    # The added instance is a config-file one now: read-only through the API.
    assert call(server, "DELETE", f"{SERVER}/instances/{added['id']}").status_code == 409

    # A bad file: an unknown backend and an instance with a broken id. Nothing changes; each error is logged.
    config["instances"].append({"id": "not-a-uuid", "secretKey": "x" * 40})
    config["storage"]["backend"] = "nonsense"
    server.config_path.write_text(json.dumps(config))
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: metric(server, "push_config_reload_success") == 0, timeout=10,
             message="a bad file never set push_config_reload_success to 0")
    # The log is written by its own thread (Sources/Logging/BufferedLogSink.swift): the metric can be seen first.
    log = server.wait_logged("Config reload refused")
    assert "Config reload refused" in log and "instances[" in log and "storage.backend" in log, log[-3000:]
    assert server.proc.poll() is None, "a bad file must not stop the server"
    client.register(random_token())
    Beams(server).register(random_token())


def test_a_config_file_instance_wins_over_a_stored_one_with_its_id_which_is_reported_and_served_again_after(environment):
    mock = environment.mock()
    server = environment.server(mock, overrides=admin_config(), name="shadow")
    stored = definition(environment, mock)
    assert call(server, "POST", f"{SERVER}/instances", json=stored).status_code == 201
    config = json.loads(server.config_path.read_text())
    original = json.dumps(config)
    from_file = dict(stored, secretKey="file-secret-" + uuid.uuid4().hex)
    config["instances"].append(from_file)
    server.config_path.write_text(json.dumps(config))
    server.proc.send_signal(signal.SIGHUP)
    in_file = Beams(server, stored["id"], from_file["secretKey"])
    wait_for(lambda: in_file.publish_raw("/interests", {"interests": ["s"], "apns": alert("s")}).status_code == 200,
             timeout=10, message="the file's instance was never served")
    assert Beams(server, stored["id"], stored["secretKey"]).publish_raw(
        "/interests", {"interests": ["s"], "apns": alert("s")}).status_code == 401, "the stored one is not served"
    server.wait_logged("has the id of a config-file instance")
    # Removed from the file, the stored definition is served again.
    server.config_path.write_text(original)
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: Beams(server, stored["id"], stored["secretKey"]).publish_raw(
        "/interests", {"interests": ["s"], "apns": alert("s")}).status_code == 200,
        timeout=10, message="the stored instance was not served again")


def test_a_changed_beams_secret_applies_at_once_on_the_node_that_changed_it(served):
    environment, mock, server = served
    body = definition(environment, mock)
    assert call(server, "POST", f"{SERVER}/instances", json=body).status_code == 201
    client = Beams(server, body["id"], body["secretKey"])
    publish = {"interests": ["s"], "apns": alert("s")}
    assert client.publish_raw("/interests", publish).status_code == 200
    new_secret = "changed-secret-" + uuid.uuid4().hex
    assert call(server, "PATCH", f"{SERVER}/instances/{body['id']}", json={"secretKey": new_secret}).status_code == 200
    assert client.publish_raw("/interests", publish).status_code == 401, "the old secret is refused at once"
    assert client.publish_raw("/interests", publish, secret=new_secret).status_code == 200
