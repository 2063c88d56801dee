"""`push-server send`: one payload to one device, printing Apple's whole answer (here: the strict mock's)."""
import subprocess
import uuid

from conftest import INSTANCE_ID


def send(server, token, *extra):
    return subprocess.run([server.binary, "send", "--config", str(server.config_path), "--instance", INSTANCE_ID,
                           "--device-token", token, *extra], capture_output=True, text=True, timeout=60)


def test_send_prints_status_apns_id_and_unique_id(env):
    server, mock = env
    token = uuid.uuid4().hex * 2
    result = send(server, token, "--alert", "hello from send")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    assert lines["status"] == "200"
    assert lines["environment"] == "sandbox"
    assert len(lines["apns-id"]) == 36
    assert lines["apns-unique-id"] != "-", "the sandbox mock returns apns-unique-id, like Apple's development host"
    seen = [r for r in mock.requests() if r["token"] == token]
    assert len(seen) == 1 and seen[0]["payload"]["aps"]["alert"] == "hello from send"


def test_send_prints_the_reason_and_timestamp_of_a_410_and_exits_1(env):
    server, mock = env
    token = uuid.uuid4().hex * 2
    mock.behave(token, status=410, reason="Unregistered", timestamp=1_700_000_000_000)
    result = send(server, token)
    assert result.returncode == 1
    assert "status: 410" in result.stdout
    assert "reason: Unregistered" in result.stdout
    assert "timestamp: 2023-11-14T22:13:20.000Z" in result.stdout


def test_send_rejects_bad_usage_with_exit_2(env):
    server, _ = env
    assert send(server, "ab" * 32, "--priority", "7").returncode == 2
    assert send(server, "ab" * 32, "--payload", "[1]").returncode == 2
    assert send(server, "ab" * 32, "--push-type", "loud").returncode == 2


def test_send_accepts_the_token_as_xcode_prints_it_and_explains_apples_reason(env):
    server, mock = env
    token = uuid.uuid4().hex * 2
    mock.behave(token, status=400, reason="BadDeviceToken")
    spelled = "<" + " ".join(token[i:i + 8].upper() for i in range(0, 64, 8)) + ">"
    result = send(server, spelled, "--environment", "production")
    assert result.returncode == 1
    lines = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    assert (lines["environment"], lines["status"], lines["reason"]) == ("production", "400", "BadDeviceToken")
    assert lines["meaning"].startswith("The token is malformed or belongs to the other environment")
    assert [r["token"] for r in mock.requests_for(token)] == [token]
    assert send(server, "<zz>").returncode == 2
