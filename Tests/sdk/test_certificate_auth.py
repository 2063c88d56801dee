"""APNs certificate authentication end to end: the release binary with `apns.certificate` (a .p12 or a PEM pair)
delivering to the strict mock in client-certificate mode (`mock_apns.py --client-ca`), and the expiry reporting
(check-config, serve, /ready, /metrics, the log). Certificates come from Tests/Support/apns_certificates.py."""
import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from conftest import INSTANCE_ID, ROOT, TOPIC, Mock, Server, write_apns_key, write_self_signed

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import apns_certificates as certs  # noqa: E402

BINARY = os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
P12_PASSWORD = "e2e-p12-password"
KEY_PASSWORD = "e2e-key-password"
KEY_PASSWORD_ENV = "PUSH_E2E_APNS_KEY_PASSWORD"
TOPICS = [(TOPIC, ["app"]), (TOPIC + ".voip", ["voip"])]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certauth")
    ca = certs.make_ca(str(directory))
    good = certs.make_client(ca, str(directory), "good", uid=TOPIC, topics=TOPICS)
    encrypted = certs.make_client(ca, str(directory), "encrypted", uid=TOPIC, topics=TOPICS, key_password=KEY_PASSWORD)
    expired = certs.make_client(ca, str(directory), "expired", uid=TOPIC, topics=TOPICS, not_before_days=-400,
                                not_after_days=-2)
    production = certs.make_client(ca, str(directory), "production", uid=TOPIC, topics=TOPICS, development=False)
    files = {
        "p12": certs.export_p12(good, str(directory / "good.p12"), P12_PASSWORD),
        "expired_p12": certs.export_p12(expired, str(directory / "expired.p12"), P12_PASSWORD),
        "encrypted_cert": encrypted.cert_path, "encrypted_key": encrypted.key_path,
        "production_cert": production.cert_path, "production_key": production.key_path,
    }
    password_file = directory / "p12-password.txt"
    password_file.write_text(P12_PASSWORD + "\n")
    wrong_password_file = directory / "wrong-password.txt"
    wrong_password_file.write_text("not-the-password\n")
    files["password_file"] = str(password_file)
    files["wrong_password_file"] = str(wrong_password_file)
    p8, pub = write_apns_key(directory)
    tls_cert, tls_key = write_self_signed(directory)
    mock = Mock(directory, pub, extra_args=["--client-ca", ca.path])
    os.environ[KEY_PASSWORD_ENV] = KEY_PASSWORD  # inherited by the servers started below
    yield {"directory": directory, "ca": ca, "files": files, "mock": mock, "p8": p8, "tls": (tls_cert, tls_key)}
    os.environ.pop(KEY_PASSWORD_ENV, None)
    mock.stop()


def apns_section(mock, certificate, topic=None):
    """The instance's apns section against the mock (which plays sandbox); `mock` None: Apple's hosts."""
    section = {"certificate": certificate, "defaultEnvironment": "sandbox"}
    if mock is not None:
        section.update({"endpointOverride": f"https://127.0.0.1:{mock.port}", "caFile": mock.ca_file})
    if topic is not None:
        section["topic"] = topic
    return section


def p12_certificate(setup, name="p12", password_file="password_file"):
    return {"p12File": setup["files"][name], "passwordFile": setup["files"][password_file]}


def start_server(setup, name, certificate, topic=None):
    directory = setup["directory"] / name
    directory.mkdir()
    tls_cert, tls_key = setup["tls"]
    return Server(directory, setup["mock"], setup["p8"], tls_cert, tls_key,
                  instance_overrides={"apns": apns_section(setup["mock"], certificate, topic)})


def write_config(setup, name, certificate, topic=None, mock=True):
    config = {"instances": [{"id": INSTANCE_ID, "secretKey": "0123456789abcdef0123456789abcdef",
                             "apns": apns_section(setup["mock"] if mock else None, certificate, topic)}],
              "storage": {"path": str(setup["directory"] / f"{name}.sqlite")}}
    path = setup["directory"] / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


def run_cli(*args, timeout=30):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout)


def deliver_one(server, mock):
    """Registers a device, publishes to it and returns the mock's record of the delivery."""
    beams = Beams(server)
    token = random_token()
    interest = unique("cert")
    beams.register(token, interests=[interest], environment="sandbox")
    publish_id = beams.publish("interests", {"interests": [interest], "apns": alert("Cert", "auth")})
    status = beams.wait_finished(publish_id)
    records = wait_for(lambda: mock.requests_for(token), message="the mock saw no request")
    return status, records


def test_delivers_through_a_p12_without_a_provider_token(setup):
    server = start_server(setup, "p12", p12_certificate(setup))
    try:
        status, records = deliver_one(server, setup["mock"])
        assert status["apns"]["accepted"] == 1, status
        [record] = records
        assert record["status"] == 200, record
        assert "authorization" not in record["headers"] and record["jwt"] is None, record
        assert record["headers"]["apns-topic"] == TOPIC, "the certificate's UID is the default topic"
        assert record["certificate"]["uid"] == TOPIC
    finally:
        server.stop()


def test_delivers_through_a_pem_pair_with_the_key_password_from_the_environment(setup):
    certificate = {"certificateFile": setup["files"]["encrypted_cert"], "keyFile": setup["files"]["encrypted_key"],
                   "passwordEnv": KEY_PASSWORD_ENV}
    server = start_server(setup, "pem", certificate, topic=TOPIC)
    try:
        status, records = deliver_one(server, setup["mock"])
        assert status["apns"]["accepted"] == 1, status
        assert [r["status"] for r in records] == [200]
        assert KEY_PASSWORD not in server.log_path.read_text(), "the key password must never be logged"
    finally:
        server.stop()


def test_check_config_prints_subject_topics_environment_and_expiry(setup):
    result = run_cli("check-config", str(write_config(setup, "check-ok", p12_certificate(setup))))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("instances[0].apns.certificate:"))
    assert f"topic {TOPIC}" in line and f"UID={TOPIC}" in line, line
    assert f"topics {TOPIC}, {TOPIC}.voip" in line, line
    assert "; environments sandbox+production; " in line, line
    assert re.search(r"notAfter \d{4}-\d\d-\d\dT[0-9:.]+Z \((36[3-5]) days left\)", line), line
    assert P12_PASSWORD not in result.stdout + result.stderr


def test_expired_certificate_fails_check_config_and_serve(setup):
    path = write_config(setup, "expired", p12_certificate(setup, "expired_p12"))
    check = run_cli("check-config", str(path))
    assert check.returncode == 2
    assert "instances[0].apns.certificate: the certificate expired on " in check.stderr, check.stderr
    assert "APNs refuses expired certificates" in check.stderr
    serve = run_cli("serve", "--config", str(path))
    assert serve.returncode != 0
    assert "instances[0].apns.certificate: the certificate expired on " in serve.stderr, serve.stderr


def pem_certificate(setup, name):
    return {"certificateFile": setup["files"][f"{name}_cert"], "keyFile": setup["files"][f"{name}_key"]}


def test_check_config_refuses_a_production_certificate_for_a_sandbox_instance_and_warns_behind_an_override(setup):
    refused = run_cli("check-config", str(write_config(setup, "env-apple", pem_certificate(setup, "production"),
                                                       mock=False)))
    assert refused.returncode == 2, refused.stdout
    assert ("instances[0].apns.certificate: the certificate is marked for production only, but the instance sends "
            "to sandbox (defaultEnvironment: every device registered without an environment): APNs would answer 403 "
            "BadCertificateEnvironment there") in refused.stderr, refused.stderr
    # The mock stands in for a host whose environment the server cannot know: a warning, and the line says why.
    warned = run_cli("check-config", str(write_config(setup, "env-mock", pem_certificate(setup, "production"))))
    assert warned.returncode == 0, warned.stderr
    assert "warning: instances[0].apns.certificate: the certificate is marked for production only" in warned.stdout
    assert "(endpointOverride is set: which environment that host plays is not known here" in warned.stdout
    assert "; environments production; " in warned.stdout, warned.stdout


def test_production_certificate_against_the_sandbox_mock_fails_with_bad_certificate_environment(setup):
    server = start_server(setup, "production-cert", pem_certificate(setup, "production"))
    try:
        status, records = deliver_one(server, setup["mock"])
        assert status["apns"]["accepted"] == 0, status
        assert status["apns"]["failedByReason"] == {"BadCertificateEnvironment": 1}, status
        assert [(r["status"], r["reason"]) for r in records] == [(403, "BadCertificateEnvironment")]
        assert records[0]["certificate"]["environments"] == ["production"]
        server.wait_logged(lambda log: any("APNs certificate" in line and "environments=production" in line
                                           for line in log.splitlines()))
        ready = requests.get(server.url("/ready"), verify=server.cert, timeout=5).json()
        cert = ready_instance(ready)["apnsCertificate"]
        assert cert["environments"] == ["production"], cert
        assert cert["environmentNote"].startswith("the certificate is marked for production only, but the instance "
                                                  "sends to sandbox"), cert
    finally:
        server.stop()


def test_wrong_password_is_a_clear_error_naming_the_field(setup):
    path = write_config(setup, "wrong", p12_certificate(setup, password_file="wrong_password_file"))
    result = run_cli("check-config", str(path))
    assert result.returncode == 2
    assert ("instances[0].apns.certificate.passwordFile: wrong password for the PKCS#12 file (mac verify failure)"
            in result.stderr), result.stderr
    assert "not-the-password" not in result.stderr


def test_topic_not_in_the_certificate_is_refused(setup):
    path = write_config(setup, "topic", p12_certificate(setup), topic="com.example.elsewhere")
    result = run_cli("check-config", str(path))
    assert result.returncode == 2
    assert (f"instances[0].apns.topic: com.example.elsewhere is not in the certificate (it covers: {TOPIC}, "
            f"{TOPIC}.voip); APNs would answer BadTopic") in result.stderr, result.stderr


def ready_instance(ready, instance=INSTANCE_ID):
    """The instance's entry in /ready (listed by id, not in the config file's order)."""
    return next(entry for entry in ready["checks"]["instances"] if entry["id"] == instance)


def metric(server, name, instance=INSTANCE_ID):
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=5).text
    match = re.search(rf'^{name}{{instance="{instance}"}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else None


def test_ready_metric_and_log_warn_ahead_and_fail_readiness_once_expired(setup):
    # Valid for a few seconds: within the 30-day warning from the start, then expired while the server runs.
    short = certs.make_client(setup["ca"], str(setup["directory"]), "short", uid=TOPIC, topics=TOPICS,
                              not_after_days=12 / 86_400)
    p12 = certs.export_p12(short, str(setup["directory"] / "short.p12"), P12_PASSWORD)
    server = start_server(setup, "short", {"p12File": p12, "passwordFile": setup["files"]["password_file"]})
    try:
        ready = requests.get(server.url("/ready"), verify=server.cert, timeout=5)
        assert ready.status_code == 200, ready.text
        instance = ready_instance(ready.json())
        assert instance["apnsCredentials"] == "certificate"
        cert = instance["apnsCertificate"]
        assert cert["daysLeft"] == 0 and cert["usable"] is True, cert
        assert cert["warning"].startswith("the APNs certificate expires in 0 days"), cert
        assert cert["topics"] == [TOPIC, TOPIC + ".voip"]
        assert cert["environments"] == ["sandbox", "production"] and cert["environmentNote"] is None, cert
        left = metric(server, "push_apns_certificate_expiry_seconds")
        assert left is not None and 0 < left <= 12, left
        log = server.wait_logged("APNs certificate expires soon")
        assert "daysLeft=0" in log and "Configuration warning" in log, log[-2000:]
        assert P12_PASSWORD not in log

        wait_for(lambda: time.time() > short.not_after.timestamp() + 1, timeout=20)
        expired = requests.get(server.url("/ready"), verify=server.cert, timeout=5)
        assert expired.status_code == 503, expired.text
        body = expired.json()
        assert body["ready"] is False and body["checks"]["apnsCertificatesUsable"] is False
        instance = ready_instance(body)
        assert instance["apnsCredentials"] == "certificate unusable"
        assert instance["apnsCertificate"]["usable"] is False
        assert instance["apnsCertificate"]["warning"].startswith("the APNs certificate expired on ")
        assert metric(server, "push_apns_certificate_expiry_seconds") < 0
    finally:
        server.stop()


def test_a_run_time_instance_with_a_certificate_is_watched_from_its_creation_to_its_deletion(setup):
    admin_key = "admin-key-for-certificate-instances-0123456789"
    directory = setup["directory"] / "runtime"
    directory.mkdir()
    tls_cert, tls_key = setup["tls"]
    server = Server(directory, setup["mock"], setup["p8"], tls_cert, tls_key, overrides={
        "keys": {"encryptionKey": "certificate-instances-encryption-key-0123456789"},
        "admin": {"keys": [{"id": "ops", "key": admin_key}]}})
    try:
        # Ten days left: within the 30-day warning.
        soon = certs.make_client(setup["ca"], str(setup["directory"]), "runtime-soon", uid=TOPIC, topics=TOPICS,
                                 not_after_days=10)
        p12 = certs.export_p12(soon, str(setup["directory"] / "runtime-soon.p12"), P12_PASSWORD)
        instance_id = str(uuid.uuid4())
        body = {"id": instance_id, "secretKey": "runtime-certificate-secret-0123456789",
                "apns": apns_section(setup["mock"], {"p12File": p12, "passwordFile": setup["files"]["password_file"]})}
        headers = {"Authorization": f"Bearer {admin_key}"}
        servers = server.url("/admin_api/v1/server/instances")
        r = requests.post(servers, json=body, headers=headers, verify=server.cert, timeout=10)
        assert r.status_code == 201, r.text
        left = metric(server, "push_apns_certificate_expiry_seconds", instance_id)
        assert left is not None and 9 * 86_400 < left <= 10 * 86_400, left
        server.wait_logged(lambda log: any(f"instance={instance_id}" in line and "APNs certificate expires soon" in line
                                           for line in log.splitlines()))
        r = requests.delete(f"{servers}/{instance_id}", headers=headers, verify=server.cert, timeout=10)
        assert r.status_code == 200, r.text
        assert metric(server, "push_apns_certificate_expiry_seconds", instance_id) is None
    finally:
        server.stop()


def test_live_activity_and_broadcast_need_token_authentication(setup):
    """APNs takes `liveactivity` pushes and channel management on token connections only: a certificate instance
    is told so at intake, and nothing is queued."""
    server = start_server(setup, "token-only", p12_certificate(setup))
    try:
        beams = Beams(server)
        body = {"interests": ["scores"], "x_live_activity": {"attributesType": "Match"},
                "apns": {"aps": {"event": "update", "content-state": {"home": 1}}}}
        response = beams.publish_raw("/interests", body)
        assert response.status_code == 422, response.text
        assert "token authentication" in response.json()["description"], response.text
        channel = beams.publish_raw("/channels", {"channels": ["dGVzdC1jaGFubmVs"],
                                                  "apns": {"aps": {"event": "update", "content-state": {}}}})
        assert channel.status_code == 409, channel.text
        assert "token authentication" in channel.json()["description"], channel.text
        listing = beams.session.get(server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/channels"),
                                    headers={"Authorization": f"Bearer {beams.secret}"}, timeout=10)
        assert listing.status_code == 409, listing.text
        assert beams.recent() == [], "nothing was queued"
    finally:
        server.stop()
