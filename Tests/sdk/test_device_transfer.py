"""Device export and import (issue 28 items 1-2, docs/DATA-FORMAT.md): `push-server export` / `import` against the
configured store beside a running server, and the admin routes. A source server's devices, registered through the
device API (interests, user, metadata, time zone, a Live Activity token, a device invalidated by the strict mock's
410) and imported from a hand-made file (FCM and HMS devices with their health), are exported, imported into a
second server's fresh store and exported again: every field comes back. Importing again changes nothing, a dry
run writes nothing, bad lines are reported with their line number and a masked token, an export resumes after a
line's cursor. Runs on SQLite (`make test-sdk`) and PostgreSQL (`make test-sdk-postgresql`).
"""
import json
import subprocess
import time

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from harness import INSTANCE_ID, SECRET

EXPORT = f"/admin_api/v1/instances/{INSTANCE_ID}/devices/export"
IMPORT = f"/admin_api/v1/instances/{INSTANCE_ID}/devices/import"
HEADER = json.dumps({"format": "push-server-devices", "version": 1})
FCM_TOKEN = "dGVzdC1pbnN0YW5jZQ:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7B338qju59zJMk"


def cli(server, *arguments, stdin=None):
    return subprocess.run([server.binary, *arguments, "--config", str(server.config_path)], input=stdin,
                          capture_output=True, text=True, timeout=120)


def export(server, *extra):
    result = cli(server, "export", "--instance", INSTANCE_ID, *extra)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def import_file(server, text, *extra):
    result = cli(server, "import", "--instance", INSTANCE_ID, "--json", *extra, "-", stdin=text)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


def devices(lines):
    """The device lines, without what differs between two exports of the same data (their resume cursors)."""
    return sorted(({k: v for k, v in line.items() if k != "cursor"} for line in lines if "platform" in line),
                  key=lambda device: (device["platform"], json.dumps(device.get("token") or device["subscription"])))


def as_file(lines):
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture(scope="module")
def servers(environment):
    mock = environment.mock()
    source = environment.server(mock, name="source")
    target = environment.server(mock, name="target")
    return source, target, mock


@pytest.fixture(scope="module")
def seeded(servers):
    """The source's devices: through the device API, a delivery result, and a hand-made file."""
    source, _, mock = servers
    client = Beams(source)
    base = f"/device_api/v1/instances/{INSTANCE_ID}/devices/apns"
    first = client.register(random_token(), interests=["news", "sport"], environment="production", user="alice")
    r = client.session.put(source.url(f"{base}/{first}/time-zone"), json={"timeZone": "Europe/Paris"}, timeout=10)
    assert r.status_code == 200, r.text
    r = client.session.put(source.url(f"{base}/{first}/live-activity/start-tokens/Match"),
                           json={"token": random_token()[:40]}, timeout=10)
    assert r.status_code == 200, r.text
    dead_token = random_token()
    dead = client.register(dead_token, interests=["news"])
    # APNs' timestamp after the registration: the token died after the device last registered.
    mock.behave(dead_token, status=410, reason="Unregistered", timestamp=int(time.time() * 1000) + 60_000)
    publish = client.publish("interests", {"interests": ["news"], "apns": alert()})
    client.wait_finished(publish)
    wait_for(lambda: client.device(dead)["invalidatedAt"], message="the 410 did not invalidate the device")
    for _ in range(3):
        client.register(random_token(), interests=[unique("i")])
    handmade = [
        {"platform": "fcm", "token": FCM_TOKEN, "userId": "bob", "interests": ["news"], "metadata": {"v": 2},
         "lastResult": {"status": 404, "reason": "UNREGISTERED", "at": "2026-01-02T03:04:05.678Z"},
         "invalidatedAt": "2026-01-02T03:04:05.678Z", "createdAt": "2025-01-01T00:00:00.001Z",
         "lastRegisteredAt": "2025-06-01T12:00:00.999Z"},
        {"platform": "hms", "token": "hms-" + random_token(), "environment": "sandbox", "timeZone": "Asia/Tokyo"},
    ]
    code, report = import_file(source, HEADER + "\n" + as_file(handmade))
    assert (code, report["created"], report["refused"]) == (0, 2, 0), report
    return export(source)


def test_export_imported_into_a_fresh_store_gives_every_field_back(servers, seeded):
    source, target, _ = servers
    assert seeded[0]["format"] == "push-server-devices" and seeded[0]["version"] == 1
    assert seeded[-1]["end"] is True and seeded[-1]["devices"] == 7
    exported = devices(seeded)
    first = next(d for d in exported if d["userId"] == "alice")
    assert (first["interests"], first["timeZone"], first["environment"]) == (["news", "sport"], "Europe/Paris", "production")
    assert [t["kind"] for t in first["liveActivities"]] == ["start"]
    dead = next(d for d in exported if d["lastResult"] and d["lastResult"]["status"] == 410)
    assert dead["lastResult"]["reason"] == "Unregistered" and dead["invalidatedAt"]

    code, report = import_file(target, as_file(seeded))
    assert (code, report["created"], report["updated"], report["unchanged"], report["refused"]) == (0, 7, 0, 0, 0)
    assert devices(export(target)) == exported, "every field, ids and times included, survives the round trip"


def test_reimport_changes_nothing_and_a_dry_run_writes_nothing(servers, seeded):
    _, target, _ = servers
    before = export(target)
    code, report = import_file(target, as_file(seeded))
    assert (code, report["created"], report["updated"], report["unchanged"]) == (0, 0, 0, 7), report
    changed = [dict(line) for line in seeded]
    changed[1] = {**changed[1], "metadata": {"changed": True}}
    changed.insert(2, {"platform": "apns", "token": random_token(), "bundleId": "com.example.new"})
    code, report = import_file(target, as_file(changed), "--dry-run")
    assert (code, report["dryRun"], report["created"], report["updated"], report["unchanged"]) == (0, True, 1, 1, 6)
    assert devices(export(target)) == devices(before), "a dry run writes nothing"
    code, report = import_file(target, as_file(changed))
    assert (report["created"], report["updated"], report["unchanged"]) == (1, 1, 6)
    assert next(d for d in devices(export(target)) if d["id"] == changed[1]["id"])["metadata"] == {"changed": True}


def test_bad_lines_are_refused_with_line_number_and_masked_token_and_the_rest_imported(servers):
    _, target, _ = servers
    good = random_token()
    bad_hex = "zz" + random_token()[2:]
    long_fcm = "x" * 100 + "WHOLE1"
    lines = [HEADER,
             json.dumps({"platform": "apns", "token": good, "interests": ["ok"]}),
             "{this is not json",
             json.dumps({"platform": "apns", "token": bad_hex}),
             json.dumps({"platform": "fcm", "token": long_fcm, "interests": ["not valid!"]}),
             json.dumps({"platform": "pager", "token": "x"}),
             ""]
    code, report = import_file(target, "\n".join(lines))
    assert code == 1, "refused lines make the exit status 1"
    assert (report["created"], report["refused"]) == (1, 4), report
    refused = {entry["line"]: entry for entry in report["refusedLines"]}
    assert sorted(refused) == [3, 4, 5, 6]
    assert "not valid JSON" in refused[3]["reason"] and refused[3]["token"] is None
    assert "hexadecimal" in refused[4]["reason"] and refused[4]["token"] == "…" + bad_hex[-6:]
    assert "Interest names" in refused[5]["reason"] and refused[5]["token"] == "…WHOLE1"
    text = json.dumps(report)
    assert bad_hex not in text and long_fcm not in text, "never a whole token in the report"
    result = cli(target, "import", "--instance", INSTANCE_ID, "-", stdin='{"platform":"apns"}\n')
    assert result.returncode == 2 and "header" in result.stderr, "a file without the header is not read at all"


def test_export_resumes_after_a_lines_cursor(servers, seeded):
    source, _, _ = servers
    cut = 3
    rest = export(source, "--after", seeded[cut]["cursor"])
    assert rest[0]["after"] == seeded[cut]["cursor"]
    assert [line["id"] for line in rest[1:-1]] == [line["id"] for line in seeded[cut + 1:-1]]
    assert rest[-1]["devices"] == len(seeded) - 2 - cut
    other = cli(source, "export", "--after", seeded[cut]["cursor"])
    assert other.returncode == 2, "a cursor of one instance's export does not resume a whole-store export"


def test_admin_routes_stream_and_page_the_export_and_import_a_file(servers, seeded):
    source, target, _ = servers
    auth = {"Authorization": f"Bearer {SECRET}"}
    wrong = {"Authorization": "Bearer not-the-secret"}
    assert requests.get(source.url(EXPORT), headers=wrong, verify=source.cert, timeout=10).status_code == 401
    pages, after = [], None
    while True:
        r = requests.get(source.url(EXPORT), params={"limit": 3, **({"after": after} if after else {})},
                         headers=auth, verify=source.cert, timeout=10)
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson", r.text
        lines = [json.loads(line) for line in r.text.splitlines()]
        pages.append(lines)
        if not lines[-1]["more"]:
            break
        after = lines[-1]["cursor"]
    assert [len(page) - 2 for page in pages] == [3, 3, 1]
    assert devices([line for page in pages for line in page]) == devices(seeded)
    # Without a limit: the whole instance from one snapshot, streamed in chunks.
    r = requests.get(source.url(EXPORT), headers=auth, verify=source.cert, timeout=30, stream=True)
    assert r.status_code == 200 and r.headers["transfer-encoding"] == "chunked", r.headers
    streamed = [json.loads(line) for line in r.iter_lines() if line]
    assert streamed[-1]["end"] is True and streamed[-1]["more"] is False
    assert devices(streamed) == devices(seeded)

    file = as_file(seeded) + json.dumps({"platform": "apns", "token": "nothex"}) + "\n"
    r = requests.post(target.url(IMPORT), params={"dryRun": "true"}, data=file, headers=auth, verify=target.cert,
                      timeout=30)
    assert r.status_code == 200, r.text
    assert (r.json()["dryRun"], r.json()["refused"], r.json()["refusedLines"][0]["line"]) == (True, 1, len(seeded) + 1)
    r = requests.post(target.url(IMPORT), data=as_file(seeded), headers=auth, verify=target.cert, timeout=30)
    assert r.status_code == 200 and r.json()["refused"] == 0 and r.json()["created"] == 0, r.text
    r = requests.post(target.url(IMPORT), data="hello\n", headers=auth, verify=target.cert, timeout=10)
    assert r.status_code == 400 and "Not a device file" in r.text
    assert requests.post(target.url(IMPORT), data=file, headers=wrong, verify=target.cert, timeout=10).status_code == 401
