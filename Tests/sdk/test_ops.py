"""Operating the daemon: systemd notify protocol, health/ready/metrics, CLI exit codes (the unit file: Tests/deb)."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import requests

from conftest import ROOT, free_port

BINARY = os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
EXAMPLE = ROOT / "config.example.json"


def run_cli(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)


def plain_config(directory: Path, port: int) -> Path:
    config = json.loads(EXAMPLE.read_text())
    config["listen"]["port"] = port
    config["storage"]["path"] = str(directory / "push.sqlite")
    path = directory / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_cli_exit_codes_and_help():
    assert run_cli("version").stdout.strip().startswith("push-server ")
    for command in ["serve", "check-config", "token", "send", "version"]:
        result = run_cli(command, "--help")
        assert result.returncode == 0, command
        assert "Usage: push-server" in result.stdout
    assert run_cli("nope").returncode == 2
    assert run_cli("token", "--config").returncode == 2


def test_check_config_reports_every_problem_with_field_paths(tmp_path):
    ok = run_cli("check-config", str(EXAMPLE))
    assert ok.returncode == 0 and "OK" in ok.stdout
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({
        "listen": {"port": 99999},
        "instances": [{"id": "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11", "secretKey": "0123456789abcdef0123456789abcdef",
                       "apns": {"teamId": "ABCDE12345", "keyId": "KEY1234567", "keyPath": "/nonexistent/AuthKey.p8",
                                "topic": "com.example.app"}}],
    }))
    result = run_cli("check-config", str(broken))
    assert result.returncode == 2
    assert "listen.port: must be between 0 and 65535, got 99999" in result.stderr
    assert "instances[0].apns.keyPath: file not found (/nonexistent/AuthKey.p8)" in result.stderr
    garbage_key = tmp_path / "AuthKey.p8"
    garbage_key.write_text("not a key")
    broken.write_text(broken.read_text().replace("/nonexistent/AuthKey.p8", str(garbage_key)))
    result = run_cli("check-config", str(broken))
    assert result.returncode == 2 and "instances[0].apns.keyPath:" in result.stderr and "PEM" in result.stderr


def test_token_command_prints_a_token_the_server_accepts(tmp_path):
    result = run_cli("token", "--config", str(EXAMPLE), "--instance", "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11",
                     "--user", "alice")
    assert result.returncode == 0
    assert result.stdout.count(".") == 2


def test_systemd_notify_ready_watchdog_stopping_and_clean_exit(tmp_path):
    notify_path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify_path)
    sock.settimeout(10)
    port = free_port()
    config = plain_config(tmp_path, port)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000")
    proc = subprocess.Popen([BINARY, "serve", "--config", str(config)], env=env,
                            stdin=subprocess.DEVNULL, stderr=open(tmp_path / "server.log", "wb"))
    try:
        messages = []
        deadline = time.time() + 10
        while time.time() < deadline and not any(m.startswith("READY=1") for m in messages):
            messages.append(sock.recv(4096).decode())
        assert any(m.startswith("READY=1") for m in messages), messages
        # READY is only sent once requests are served.
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=2).json()["status"] == "ok"
        watchdogs = [m for m in (sock.recv(4096).decode() for _ in range(2))]
        assert all(m == "WATCHDOG=1" for m in watchdogs), watchdogs
        proc.send_signal(signal.SIGTERM)
        seen = []
        while "STOPPING=1" not in seen:
            seen.append(sock.recv(4096).decode())
        assert proc.wait(timeout=25) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()


def test_health_ready_and_metrics_are_served_with_bounded_labels(tmp_path):
    port = free_port()
    config = plain_config(tmp_path, port)
    proc = subprocess.Popen([BINARY, "serve", "--config", str(config)], stdin=subprocess.DEVNULL,
                            stderr=open(tmp_path / "server.log", "wb"))
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                requests.get(f"{base}/health", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.1)
        ready = requests.get(f"{base}/ready", timeout=2)
        assert ready.status_code == 200
        assert ready.json()["checks"]["instances"][0]["apnsCredentials"] == "not configured"
        # SQLite is this node's own: no fleet to list.
        assert "nodes" not in ready.json()["checks"]
        # A request to a random path must not become a metric label.
        requests.get(f"{base}/some/random/path/abc123", timeout=2)
        requests.get(f"{base}/device_api/v1/instances/8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11/devices/apns/apns-zzz", timeout=2)
        metrics = requests.get(f"{base}/metrics", timeout=2)
        assert metrics.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = metrics.text
        assert "abc123" not in text and "apns-zzz" not in text
        assert 'route="/device_api/v1/instances/:instance/devices/:platform/:device"' in text
        for family in ["push_http_requests_total", "push_http_request_duration_seconds", "push_apns_streams_in_flight",
                       "push_publish_queue_depth", "push_notifications_total", "push_http_open_connections"]:
            assert f"# TYPE {family}" in text, family
        # Memory, split so a rising RSS reads as live data, malloc's retained free space or SQLite's caches.
        values = {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
                  for line in text.splitlines() if line.startswith("push_process_") or line.startswith("push_store_sqlite")}
        with open(f"/proc/{proc.pid}/statm") as statm:
            resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        assert 0.5 * resident < values["push_process_resident_bytes"] < 2 * resident
        assert values['push_process_heap_bytes{state="in_use"}'] > 0
        assert values['push_process_heap_bytes{state="free"}'] >= 0
        assert values['push_process_heap_bytes{state="mapped"}'] >= 0
        # The schema and the open connections' caches at least.
        assert values["push_store_sqlite_memory_bytes"] > 64 * 1024
    finally:
        proc.terminate()
        assert proc.wait(timeout=25) == 0


def test_logs_mask_tokens_and_never_contain_the_secret(tmp_path):
    port = free_port()
    config = plain_config(tmp_path, port)
    log_path = tmp_path / "server.log"
    proc = subprocess.Popen([BINARY, "serve", "--config", str(config)], stdin=subprocess.DEVNULL,
                            stderr=open(log_path, "wb"))
    base = f"http://127.0.0.1:{port}"
    token = "ab" * 32
    secret = json.loads(EXAMPLE.read_text())["instances"][0]["secretKey"]
    instance = json.loads(EXAMPLE.read_text())["instances"][0]["id"]
    try:
        for _ in range(100):
            try:
                requests.get(f"{base}/health", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.1)
        requests.post(f"{base}/device_api/v1/instances/{instance}/devices/apns",
                      json={"token": token, "bundleIdentifier": "com.example.app"}, timeout=2)
        requests.post(f"{base}/publish_api/v1/instances/{instance}/publishes/interests",
                      headers={"Authorization": f"Bearer {secret}"},
                      json={"interests": ["x"], "apns": {"aps": {"alert": "x"}}}, timeout=2)
        requests.post(f"{base}/publish_api/v1/instances/{instance}/publishes/interests",
                      headers={"Authorization": "Bearer wrong-secret-guess"},
                      json={"interests": ["x"], "apns": {"aps": {"alert": "x"}}}, timeout=2)
    finally:
        proc.terminate()
        proc.wait(timeout=25)
    log = log_path.read_text()
    assert "Device registered" in log
    assert token not in log
    assert "abab…abab (64)" in log
    assert secret not in log and "wrong-secret-guess" not in log


# The unit file is checked as shipped, with systemd-analyze verify, in Tests/deb/test_package.py.


def start_plain(tmp_path, port, **changes):
    """The example config on `port`, with top-level sections replaced by `changes`. - Returns: the process."""
    config = json.loads(plain_config(tmp_path, port).read_text())
    config.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.Popen([BINARY, "serve", "--config", str(path)], stdin=subprocess.DEVNULL,
                            stderr=open(tmp_path / "server.log", "ab"))
    for _ in range(100):
        try:
            requests.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except requests.RequestException:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError((tmp_path / "server.log").read_text()[-2000:])


def stop(proc):
    proc.terminate()
    assert proc.wait(timeout=25) == 0


def test_without_ops_settings_details_go_only_to_unforwarded_loopback_peers(tmp_path):
    port = free_port()
    proc = start_plain(tmp_path, port)
    base = f"http://127.0.0.1:{port}"
    try:
        assert requests.get(f"{base}/metrics", timeout=2).status_code == 200
        assert "checks" in requests.get(f"{base}/ready", timeout=2).json()
        # A reverse proxy on this host connects from loopback for internet clients, and says so in a header.
        for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"]:
            proxied = {header: "203.0.113.7"}
            metrics = requests.get(f"{base}/metrics", headers=proxied, timeout=2)
            assert metrics.status_code == 403, header
            assert metrics.json() == {"error": "Forbidden", "description": "Metrics are only served to the operator"}
            ready = requests.get(f"{base}/ready", headers=proxied, timeout=2)
            assert ready.status_code == 200 and ready.json() == {"ready": True}, header
            assert requests.get(f"{base}/health", headers=proxied, timeout=2).json()["status"] == "ok"
    finally:
        stop(proc)


def test_an_ops_token_is_required_for_metrics_and_ready_details(tmp_path):
    port = free_port()
    token = "ops-token-" + "0123456789abcdef" * 2
    (tmp_path / "ops-token").write_text(token + "\n")
    proc = start_plain(tmp_path, port, ops={"tokenFile": str(tmp_path / "ops-token")})
    base = f"http://127.0.0.1:{port}"
    try:
        for authorization in [None, "Bearer wrong-token-guess", f"Basic {token}", f"Bearer {token}x"]:
            headers = {"Authorization": authorization} if authorization else {}
            metrics = requests.get(f"{base}/metrics", headers=headers, timeout=2)
            assert metrics.status_code == 401, authorization
            assert metrics.headers["WWW-Authenticate"] == "Bearer"
            assert metrics.json()["error"] == "Unauthorized"
            assert requests.get(f"{base}/ready", headers=headers, timeout=2).json() == {"ready": True}
        good = {"Authorization": f"Bearer {token}"}
        assert "# TYPE push_store_writable gauge" in requests.get(f"{base}/metrics", headers=good, timeout=2).text
        assert requests.get(f"{base}/ready", headers=good, timeout=2).json()["checks"]["store"]["writable"] is True
    finally:
        stop(proc)
    log = (tmp_path / "server.log").read_text()
    assert token not in log and "wrong-token-guess" not in log


def test_an_ops_listener_serves_details_and_the_main_listener_does_not(tmp_path):
    port, ops_port = free_port(), free_port()
    proc = start_plain(tmp_path, port, ops={"listen": f"127.0.0.1:{ops_port}"})
    base, ops = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{ops_port}"
    try:
        assert requests.get(f"{base}/metrics", timeout=2).status_code == 403
        assert requests.get(f"{base}/ready", timeout=2).json() == {"ready": True}
        assert requests.get(f"{base}/health", timeout=2).json()["status"] == "ok"
        assert "push_http_requests_total" in requests.get(f"{ops}/metrics", timeout=2).text
        assert requests.get(f"{ops}/ready", timeout=2).json()["checks"]["store"]["ok"] is True
        assert requests.get(f"{ops}/health", timeout=2).json()["status"] == "ok"
        # The ops listener serves nothing else.
        assert requests.get(f"{ops}/publish_api/v1/instances/x/publishes", timeout=2).status_code == 404
    finally:
        stop(proc)
    assert f"port={ops_port}" in (tmp_path / "server.log").read_text()


def test_a_new_data_directory_is_0700_and_the_database_files_0600(tmp_path):
    port = free_port()
    data = tmp_path / "new" / "data"
    proc = start_plain(tmp_path, port, storage={"path": str(data / "push.sqlite")})
    try:
        instance = json.loads(EXAMPLE.read_text())["instances"][0]["id"]
        requests.post(f"http://127.0.0.1:{port}/device_api/v1/instances/{instance}/devices/apns",
                      json={"token": "cd" * 32, "bundleIdentifier": "com.example.app"}, timeout=2).raise_for_status()
        assert oct(data.stat().st_mode & 0o777) == "0o700"
        for name in ["push.sqlite", "push.sqlite-wal", "push.sqlite-shm"]:
            assert oct((data / name).stat().st_mode & 0o777) == "0o600", name
    finally:
        stop(proc)


def test_an_instance_secret_shorter_than_32_bytes_is_a_configuration_error(tmp_path):
    config = json.loads(EXAMPLE.read_text())
    config["instances"][0]["secretKey"] = "s" * 31
    path = tmp_path / "short.json"
    path.write_text(json.dumps(config))
    result = run_cli("check-config", str(path))
    assert result.returncode == 2
    assert "instances[0].secretKey: the secret must be at least 32 bytes" in result.stderr
