"""Imports from other providers (issue 28 item 4, docs/OPERATIONS.md "Importing from other providers"):
`push-server import --from parse|onesignal|sns` reads each provider's own export (the sample files in
Tests/sdk/data, made for these tests: good rows, a duplicate and bad rows), converts each row to a device line and
imports it through the device file's parser, caps and batches. For each: a dry run reports and changes nothing;
the real run reports created and refused rows with their line in the provider's file and masked tokens; a publish
to an imported interest (or user) reaches each imported device exactly once at the strict APNs and FCM stand-ins
and no other; importing again leaves every device unchanged. Runs on SQLite (`make test-sdk`) and PostgreSQL
(`make test-sdk-postgresql`).
"""
import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import requests

from beams import Beams, alert
from harness import INSTANCE_ID, SECRET
from platform_mocks import MockFCM

DATA = Path(__file__).parent / "data"


def hx(seed):
    """The sample files' tokens: made from a seed, as Tests/sdk/data's files were."""
    return hashlib.sha256(seed.encode()).hexdigest()


def fcm(seed):
    return hx(seed)[:22] + ":APA91b" + (hx(seed + "a") + hx(seed + "b"))[:96]


@pytest.fixture(scope="module")
def platforms(environment):
    directory = environment.directory / "fcm"
    directory.mkdir()
    fcm_mock = MockFCM(directory)
    environment.processes.append(fcm_mock)
    apns = environment.mock()
    server = environment.server(apns, instance_overrides={"fcm": fcm_mock.config()})
    return server, apns, fcm_mock


def run_import(server, provider, name, *extra, json_report=True):
    result = subprocess.run([server.binary, "import", "--config", str(server.config_path), "--instance", INSTANCE_ID,
                             "--from", provider, *(["--json"] if json_report else []), *extra, str(DATA / name)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode, (json.loads(result.stdout) if json_report else result.stdout)


def stored(server):
    result = subprocess.run([server.binary, "export", "--config", str(server.config_path), "--instance", INSTANCE_ID],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return sorted((line for line in map(json.loads, result.stdout.splitlines()) if "platform" in line),
                  key=lambda device: device["id"])


def counts(report):
    return report["created"], report["updated"], report["unchanged"], report["refused"]


def refused(report):
    return {entry["line"]: entry for entry in report["refusedLines"]}


def reached_once(server, apns, fcm_mock, publish, reached, missed):
    client = Beams(server)
    client.wait_finished(client.publish(*publish))
    for token in reached:
        sent = apns.requests_for(token) if ":" not in token else fcm_mock.requests(token)
        assert len(sent) == 1, f"{token[-6:]}: {len(sent)} deliveries, expected one"
    for token in missed:
        assert not apns.requests_for(token) and not fcm_mock.requests(token), f"{token[-6:]} was not to be reached"


def test_parse_installations_dry_run_import_publish_and_reimport(platforms):
    server, apns, fcm_mock = platforms
    before = stored(server)
    code, report = run_import(server, "parse", "parse_installations.json", "--dry-run")
    assert (code, report["dryRun"], counts(report)) == (1, True, (3, 0, 0, 6)), report
    assert stored(server) == before, "a dry run writes nothing"

    code, report = run_import(server, "parse", "parse_installations.json")
    assert (code, counts(report)) == (1, (3, 0, 0, 6)), report
    lines = refused(report)
    assert sorted(lines) == [63, 71, 79, 88, 96, 105], "each refused row by the line its object starts on"
    assert "winphone" in lines[63]["reason"] and "no deviceToken" in lines[71]["reason"]
    assert lines[79]["token"] == "…" + hx("parse-ios-1")[-6:], "the same token twice in a batch: the second refused"
    assert "hexadecimal" in lines[88]["reason"] and "Expo" in lines[96]["reason"]
    assert "PushSubscription" in lines[105]["reason"]
    assert report["notes"] == {"channel names that are not interest names dropped": 1,
                               "time zones that are not IANA names dropped": 1}
    assert hx("parse-ios-1") not in json.dumps(report), "never a whole token in the report"
    devices = {device.get("token"): device for device in stored(server)}
    ios = devices[hx("parse-ios-1")]
    assert (ios["userId"], ios["interests"], ios["timeZone"], ios["bundleId"]) == (
        "alice", ["news", "sport"], "Europe/Paris", "com.example.sdktest")
    assert ios["metadata"] == {"parseObjectId": "pA1", "parseInstallationId": "2f0c5e0a-1111-4a8b-9c3d-000000000001"}
    assert ios["createdAt"] == "2024-03-01T10:00:00.000Z"
    assert devices[fcm("parse-android-1")]["userId"] == "bob"
    assert devices[hx("parse-ios-2")]["timeZone"] is None, "GMT+01:00 is no IANA zone: dropped"

    reached_once(server, apns, fcm_mock,
                 ("interests", {"interests": ["news"], "apns": alert(), "fcm": {"notification": {"title": "T"}}}),
                 reached=[hx("parse-ios-1"), fcm("parse-android-1")], missed=[hx("parse-ios-2")])

    code, report = run_import(server, "parse", "parse_installations.json")
    assert counts(report) == (0, 0, 3, 6), "importing again changes nothing"

    code, report = run_import(server, "parse", "parse_installations.mongo.ndjson")
    assert (code, counts(report)) == (1, (2, 0, 0, 1)), report
    assert refused(report)[3]["reason"] == "deviceType embedded is not one push-server sends to"
    devices = {device.get("token"): device for device in stored(server)}
    assert (devices[hx("parse-mongo-ios-1")]["userId"], devices[fcm("parse-mongo-android-1")]["userId"]) == ("carol", "dave")


def test_onesignal_csv_dry_run_import_with_mapped_tags_publish_and_reimport(platforms):
    server, apns, fcm_mock = platforms
    before = stored(server)
    mapping = ("--map", "tag:team=team-{value} tag:news=news")
    code, report = run_import(server, "onesignal", "onesignal_players.csv", "--dry-run", *mapping)
    assert (code, report["dryRun"], counts(report)) == (1, True, (4, 0, 0, 5)), report
    assert stored(server) == before, "a dry run writes nothing"

    code, text = run_import(server, "onesignal", "onesignal_players.csv", *mapping, json_report=False)
    assert code == 1
    assert "created 4, updated 0, unchanged 0, refused 5" in text, text
    assert "note: 3 rows: time zones given only as a UTC offset left out" in text, text
    for line, reason in [(4, "invalid_identifier = t"), (5, "device_type 11 (email)"), (9, "web_auth and web_p256"),
                         (10, "not RFC 4180 CSV"), (11, "")]:
        assert any(row.startswith(f"line {line}:") and reason in row for row in text.splitlines()), (line, text)
    assert hx("onesignal-ios-gone") not in text and hx("onesignal-ios-1") not in text, "tokens are masked"
    devices = {device.get("token"): device for device in stored(server)}
    assert (devices[hx("onesignal-ios-1")]["userId"], devices[hx("onesignal-ios-1")]["interests"]) == (
        "carol", ["news", "team-arsenal"])
    assert devices[hx("onesignal-ios-1")]["timeZone"] is None, "a seconds offset names no zone"
    assert devices[fcm("onesignal-android-1")]["interests"] == ["team-chelsea"]
    assert devices["hms-" + hx("onesignal-huawei-1")[:40]]["userId"] == "erin"

    reached_once(server, apns, fcm_mock,
                 ("interests", {"interests": ["team-arsenal"], "apns": alert(), "fcm": {"notification": {"title": "T"}}}),
                 reached=[hx("onesignal-ios-1"), fcm("onesignal-android-2")], missed=[fcm("onesignal-android-1")])

    code, report = run_import(server, "onesignal", "onesignal_players.csv", *mapping)
    assert counts(report) == (0, 0, 4, 5), "importing again changes nothing"
    code, report = run_import(server, "onesignal", "onesignal_players.csv")
    assert counts(report)[:2] == (0, 3), "without --map the tags give no interests: the mapped ones are replaced"


def test_sns_endpoint_listing_dry_run_import_publish_to_a_user_and_reimport(platforms):
    server, apns, fcm_mock = platforms
    before = stored(server)
    code, report = run_import(server, "sns", "sns_endpoints.json", "--map", "CustomUserData=user", "--dry-run")
    assert (code, counts(report)) == (1, (3, 0, 0, 3)), report
    assert stored(server) == before, "a dry run writes nothing"
    code, report = run_import(server, "sns", "sns_endpoints.json", "--map", "CustomUserData=user")
    assert (code, counts(report)) == (1, (3, 0, 0, 3)), report
    lines = refused(report)
    assert sorted(lines) == [19, 27, 34]
    assert "disabled at SNS" in lines[19]["reason"] and lines[19]["token"] == "…" + hx("sns-ios-disabled")[-6:]
    assert "ADM" in lines[27]["reason"] and "no Attributes.Token" in lines[34]["reason"]
    devices = {device.get("token"): device for device in stored(server)}
    ios = devices[hx("sns-ios-1")]
    assert (ios["userId"], ios["environment"], ios["environmentDeclared"]) == ("frank", "sandbox", True)
    assert devices[fcm("sns-android-1")]["userId"] == "grace"

    reached_once(server, apns, fcm_mock, ("users", {"users": ["frank"], "apns": alert()}),
                 reached=[hx("sns-ios-1")], missed=[hx("sns-ios-2")])

    code, report = run_import(server, "sns", "sns_endpoints.json", "--map", "CustomUserData=user")
    assert counts(report) == (0, 0, 3, 3), "importing again changes nothing"


def test_a_file_that_is_not_the_providers_export_is_not_read(platforms):
    server, _, _ = platforms
    def attempt(*arguments):
        return subprocess.run([server.binary, "import", "--config", str(server.config_path), "--instance", INSTANCE_ID,
                               *arguments], capture_output=True, text=True, timeout=60)
    result = attempt("--from", "parse", str(DATA / "onesignal_players.csv"))
    assert result.returncode == 2 and "outside any JSON value" in result.stderr, result.stderr
    result = attempt("--from", "onesignal", str(DATA / "sns_endpoints.json"))
    assert result.returncode == 2 and "no `identifier` column" in result.stderr, result.stderr
    result = attempt("--from", "airship", str(DATA / "sns_endpoints.json"))
    assert result.returncode == 2 and "--from must be" in result.stderr
    result = attempt("--map", "CustomUserData=user", str(DATA / "sns_endpoints.json"))
    assert result.returncode == 2 and "go with --from" in result.stderr


def test_the_admin_import_route_reads_a_providers_export_with_its_map_and_dry_run(environment, platforms):
    """`POST …/devices/import?from=onesignal&map=…` on a running server: the CLI's conversion, report (masked tokens,
    the row's line), notes and dry run; bad parameters and a file that is not the provider's export answer 400."""
    _, apns, fcm_mock = platforms
    server = environment.server(apns, instance_overrides={"fcm": fcm_mock.config()}, name="admin-route")
    route = server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/devices/import")
    auth = {"Authorization": f"Bearer {SECRET}"}
    body = (DATA / "onesignal_players.csv").read_bytes()

    def post(params, data=body, headers=auth):
        return requests.post(route, params=params, data=data, headers=headers, verify=server.cert, timeout=30)

    mapping = {"from": "onesignal", "map": "tag:team=team-{value} tag:news=news"}
    r = post({**mapping, "dryRun": "true"})
    assert r.status_code == 200, r.text
    assert (r.json()["dryRun"], counts(r.json())) == (True, (4, 0, 0, 5)), r.text
    assert stored(server) == [], "a dry run writes nothing"

    r = post(mapping)
    assert r.status_code == 200, r.text
    report = r.json()
    assert counts(report) == (4, 0, 0, 5), report
    assert sorted(refused(report)) == [4, 5, 9, 10, 11], "refused rows by their line in the CSV"
    assert report["notes"] == {"time zones given only as a UTC offset left out": 3}, report
    assert hx("onesignal-ios-gone") not in r.text and hx("onesignal-ios-1") not in r.text, "tokens are masked"
    devices = {device.get("token"): device for device in stored(server)}
    assert devices[hx("onesignal-ios-1")]["interests"] == ["news", "team-arsenal"]
    assert devices[hx("onesignal-ios-1")]["userId"] == "carol"
    assert counts(post(mapping).json()) == (0, 0, 4, 5), "importing again changes nothing"

    for params, reason in [({"from": "airship"}, "`from` must be parse, onesignal or sns"),
                           ({"map": "CustomUserData=user"}, "go with `from`"),
                           ({"from": "onesignal", "map": "CustomUserData=user"}, "`map` CustomUserData=user is for"),
                           ({"from": "parse", "snsPlatform": "GCM"}, "`snsPlatform` is for")]:
        r = post(params)
        assert r.status_code == 400 and reason in r.text, (params, r.text)
    r = post({"from": "onesignal"}, data=(DATA / "sns_endpoints.json").read_bytes())
    assert r.status_code == 400 and "no `identifier` column" in r.text, r.text
    assert post({"from": "onesignal"}, headers={"Authorization": "Bearer not-the-secret"}).status_code == 401
    assert server.stop() == 0
