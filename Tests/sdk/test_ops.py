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
from harness import serve, start_on_free_ports

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
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000")
    log = tmp_path / "server.log"
    messages = []

    def start(port):
        proc = subprocess.Popen([BINARY, "serve", "--config", str(plain_config(tmp_path, port))], env=env,
                                stdin=subprocess.DEVNULL, stderr=open(log, "ab"))
        # READY=1, or the process gave up (its port taken: start_on_free_ports tries another).
        sock.settimeout(0.5)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(m.startswith("READY=1") for m in messages):
            try:
                messages.append(sock.recv(4096).decode())
            except TimeoutError:
                if proc.poll() is not None:
                    raise RuntimeError(f"push-server exited: {log.read_text()[-2000:]}")
        return proc

    proc, (port,) = start_on_free_ports(start, log, [free_port()])
    sock.settimeout(10)
    try:
        assert any(m.startswith("READY=1") for m in messages), messages
        # READY is only sent once requests are served.
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["status"] == "ok"
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
    proc, port = start_plain(tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        ready = requests.get(f"{base}/ready", timeout=10)
        assert ready.status_code == 200
        assert ready.json()["checks"]["instances"][0]["apnsCredentials"] == "not configured"
        # SQLite is this node's own: no fleet to list.
        assert "nodes" not in ready.json()["checks"]
        # A request to a random path must not become a metric label.
        requests.get(f"{base}/some/random/path/abc123", timeout=10)
        requests.get(f"{base}/device_api/v1/instances/8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11/devices/apns/apns-zzz", timeout=10)
        metrics = requests.get(f"{base}/metrics", timeout=10)
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
    log_path = tmp_path / "server.log"
    proc, port = start_plain(tmp_path)
    base = f"http://127.0.0.1:{port}"
    token = "ab" * 32
    secret = json.loads(EXAMPLE.read_text())["instances"][0]["secretKey"]
    instance = json.loads(EXAMPLE.read_text())["instances"][0]["id"]
    try:
        requests.post(f"{base}/device_api/v1/instances/{instance}/devices/apns",
                      json={"token": token, "bundleIdentifier": "com.example.app"}, timeout=10)
        requests.post(f"{base}/publish_api/v1/instances/{instance}/publishes/interests",
                      headers={"Authorization": f"Bearer {secret}"},
                      json={"interests": ["x"], "apns": {"aps": {"alert": "x"}}}, timeout=10)
        requests.post(f"{base}/publish_api/v1/instances/{instance}/publishes/interests",
                      headers={"Authorization": "Bearer wrong-secret-guess"},
                      json={"interests": ["x"], "apns": {"aps": {"alert": "x"}}}, timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=25)
    # Read after the exit: the server flushes its log before it exits.
    log = log_path.read_text()
    assert "Device registered" in log
    assert token not in log
    assert "abab…abab (64)" in log
    assert secret not in log and "wrong-secret-guess" not in log


# The unit file is checked as shipped, with systemd-analyze verify, in Tests/deb/test_package.py.


def start_plain(tmp_path, ops_listener=False, **changes):
    """The example config on a free port, with top-level sections replaced by `changes` and, with `ops_listener`,
    an ops listener on another free port; a port another worker took meanwhile is replaced (start_on_free_ports).
    Returns: the process serving /health, its port, and the ops listener's port if asked for."""
    log = tmp_path / "server.log"

    def start(port, ops_port=None):
        config = json.loads(plain_config(tmp_path, port).read_text())
        config.update(changes)
        if ops_port:
            config["ops"] = {**config.get("ops", {}), "listen": f"127.0.0.1:{ops_port}"}
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        return serve(path, log, f"http://127.0.0.1:{port}/health")

    proc, ports = start_on_free_ports(start, log, [free_port() for _ in range(2 if ops_listener else 1)])
    return (proc, *ports)


def stop(proc):
    proc.terminate()
    assert proc.wait(timeout=25) == 0


def test_without_ops_settings_details_go_only_to_unforwarded_loopback_peers(tmp_path):
    proc, port = start_plain(tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 200
        assert "checks" in requests.get(f"{base}/ready", timeout=10).json()
        # A reverse proxy on this host connects from loopback for internet clients, and says so in a header.
        for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"]:
            proxied = {header: "203.0.113.7"}
            metrics = requests.get(f"{base}/metrics", headers=proxied, timeout=10)
            assert metrics.status_code == 403, header
            assert metrics.json() == {"error": "Forbidden", "description": "Metrics are only served to the operator"}
            ready = requests.get(f"{base}/ready", headers=proxied, timeout=10)
            assert ready.status_code == 200 and ready.json() == {"ready": True}, header
            assert requests.get(f"{base}/health", headers=proxied, timeout=10).json()["status"] == "ok"
    finally:
        stop(proc)


def test_an_ops_token_is_required_for_metrics_and_ready_details(tmp_path):
    token = "ops-token-" + "0123456789abcdef" * 2
    (tmp_path / "ops-token").write_text(token + "\n")
    proc, port = start_plain(tmp_path, ops={"tokenFile": str(tmp_path / "ops-token")})
    base = f"http://127.0.0.1:{port}"
    try:
        for authorization in [None, "Bearer wrong-token-guess", f"Basic {token}", f"Bearer {token}x"]:
            headers = {"Authorization": authorization} if authorization else {}
            metrics = requests.get(f"{base}/metrics", headers=headers, timeout=10)
            assert metrics.status_code == 401, authorization
            assert metrics.headers["WWW-Authenticate"] == "Bearer"
            assert metrics.json()["error"] == "Unauthorized"
            assert requests.get(f"{base}/ready", headers=headers, timeout=10).json() == {"ready": True}
        good = {"Authorization": f"Bearer {token}"}
        assert "# TYPE push_store_writable gauge" in requests.get(f"{base}/metrics", headers=good, timeout=10).text
        assert requests.get(f"{base}/ready", headers=good, timeout=10).json()["checks"]["store"]["writable"] is True
    finally:
        stop(proc)
    log = (tmp_path / "server.log").read_text()
    assert token not in log and "wrong-token-guess" not in log


def test_an_ops_listener_serves_details_and_the_main_listener_does_not(tmp_path):
    proc, port, ops_port = start_plain(tmp_path, ops_listener=True)
    base, ops = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{ops_port}"
    try:
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 403
        assert requests.get(f"{base}/ready", timeout=10).json() == {"ready": True}
        assert requests.get(f"{base}/health", timeout=10).json()["status"] == "ok"
        assert "push_http_requests_total" in requests.get(f"{ops}/metrics", timeout=10).text
        assert requests.get(f"{ops}/ready", timeout=10).json()["checks"]["store"]["ok"] is True
        assert requests.get(f"{ops}/health", timeout=10).json()["status"] == "ok"
        # The ops listener serves nothing else.
        assert requests.get(f"{ops}/publish_api/v1/instances/x/publishes", timeout=10).status_code == 404
    finally:
        stop(proc)
    assert f"port={ops_port}" in (tmp_path / "server.log").read_text()


def test_a_new_data_directory_is_0700_and_the_database_files_0600(tmp_path):
    data = tmp_path / "new" / "data"
    proc, port = start_plain(tmp_path, storage={"path": str(data / "push.sqlite")})
    try:
        instance = json.loads(EXAMPLE.read_text())["instances"][0]["id"]
        requests.post(f"http://127.0.0.1:{port}/device_api/v1/instances/{instance}/devices/apns",
                      json={"token": "cd" * 32, "bundleIdentifier": "com.example.app"}, timeout=10).raise_for_status()
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
