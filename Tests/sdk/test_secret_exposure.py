"""Secrets others can read or know (docs/SECURITY.md, "Secrets"): `check-config` warns about each, and `serve`
refuses to start with any of them unless it listens on loopback only. Real binary; `serve` is refused before it
binds, so nothing listens on 0.0.0.0."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, free_port
from harness import serve, start_on_free_ports, write_apns_key

BINARY = os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))
EXAMPLE_SECRET = "example-secret-change-me-0123456789abcdef"
IDS = ["8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11", "3d2f6b0a-5c4e-4b7a-9e1d-0f2a3b4c5d6e"]


def run_cli(*args, timeout=30):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, cwd="/")


def private(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def clean_config(directory: Path, host: str) -> dict:
    """Every secret in its own 0600 file, one secret per instance, none from the documentation."""
    directory.mkdir(parents=True, exist_ok=True)
    p8, _ = write_apns_key(directory)
    p8.chmod(0o600)
    instances = []
    for n, instance_id in enumerate(IDS):
        secret = private(directory / f"secret-{n}", f"instance-{n}-secret-0123456789abcdef0123\n")
        instances.append({"id": instance_id, "secretKeyFile": secret,
                          "apns": {"teamId": "ABCDE12345", "keyId": "KEY1234567", "keyPath": str(p8),
                                   "topic": "com.example.app"}})
    return {"listen": {"host": host, "port": free_port()}, "storage": {"path": str(directory / "push.sqlite")},
            "instances": instances}


def write(directory: Path, config: dict, mode=0o600) -> str:
    path = directory / "config.json"
    path.write_text(json.dumps(config))
    path.chmod(mode)
    return str(path)


@pytest.fixture
def cases(tmp_path):
    """Each exposure as (name, config, mode of the config file, the field its warning names), all on 0.0.0.0."""
    world_key = clean_config(tmp_path / "key", "0.0.0.0")
    Path(world_key["instances"][0]["apns"]["keyPath"]).chmod(0o644)
    inline = clean_config(tmp_path / "inline", "0.0.0.0")
    del inline["instances"][1]["secretKeyFile"]
    inline["instances"][1]["secretKey"] = "an-inline-secret-0123456789abcdef0123456789"
    shared = clean_config(tmp_path / "shared", "0.0.0.0")
    shared["instances"][1]["secretKeyFile"] = shared["instances"][0]["secretKeyFile"]
    example = clean_config(tmp_path / "example", "0.0.0.0")
    example["instances"][0]["secretKeyFile"] = private(tmp_path / "example" / "secret-x", EXAMPLE_SECRET)
    return [("world-readable .p8", world_key, 0o600, "instances[0].apns.keyPath"),
            ("inline secret in a 0644 config", inline, 0o644, "instances[1].secretKey"),
            ("two instances, one secret", shared, 0o600, "instances[1]"),
            ("the README's secret", example, 0o600, "instances[0]")]


def test_check_config_warns_about_each_exposed_or_known_secret(cases, tmp_path):
    for name, config, mode, field in cases:
        path = write(Path(config["storage"]["path"]).parent, config, mode)
        result = run_cli("check-config", path)
        assert result.returncode == 0, (name, result.stderr)
        warnings = [line for line in result.stdout.splitlines() if line.startswith(f"warning: {field}:")]
        assert warnings, (name, result.stdout)
        assert "refused on the non-loopback listener 0.0.0.0" in warnings[0], (name, warnings)
    clean = tmp_path / "clean"
    result = run_cli("check-config", write(clean, clean_config(clean, "0.0.0.0")))
    assert result.returncode == 0 and "warning:" not in result.stdout, result.stdout


def test_serve_refuses_each_exposure_on_a_non_loopback_listener_and_starts_on_loopback(cases):
    for name, config, mode, field in cases:
        directory = Path(config["storage"]["path"]).parent
        result = run_cli("serve", "--config", write(directory, config, mode), timeout=20)
        assert result.returncode == 2, (name, result.returncode, result.stderr[-2000:])
        assert f"{field}:" in result.stderr and "refused on the non-loopback listener" in result.stderr, \
            (name, result.stderr[-2000:])
        assert not (directory / "push.sqlite").exists(), "refused before opening anything"
    # The same exposure on loopback (the README's one-command run, every test) starts, with a warning logged.
    name, config, mode, field = cases[-1]
    config["listen"]["host"] = "127.0.0.1"
    directory = Path(config["storage"]["path"]).parent
    log = directory / "serve.log"

    def start(port):
        config["listen"]["port"] = port
        return serve(write(directory, config, mode), log, f"http://127.0.0.1:{port}/health",
                     stdout=subprocess.DEVNULL)

    # A port another worker took meanwhile is replaced; any other exit fails the test with the log.
    process, _ = start_on_free_ports(start, log, [config["listen"]["port"]])
    process.terminate()
    process.wait(timeout=30)
    # Read after the exit: the server flushes its log before it exits.
    stderr = log.read_text()
    assert "example secret" in stderr, stderr[-2000:]


def test_the_readme_quickstart_config_still_checks_and_would_be_refused_only_off_loopback():
    result = run_cli("check-config", str(ROOT / "config.example.json"))
    assert result.returncode == 0, result.stderr
    assert "warning: instances[0]: uses the example secret" in result.stdout
    assert "refused on the non-loopback" not in result.stdout, "it listens on 127.0.0.1"
