"""Fixtures for the Debian package checks: the .deb `make deb` built (PUSH_SERVER_DEB), unpacked once.

`make test-deb` builds the package and runs these. Nothing is installed on the machine: the package is unpacked
into a temporary tree (`dpkg-deb -x`) and its binary, config, unit and user definition are exercised there; dpkg
installs go into a throwaway root (test_install.py), and systemd runs in namespaces of its own (test_unit_systemd.py).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))
from harness import ROOT, free_port, start_on_free_ports, write_apns_key, write_self_signed  # noqa: E402,F401  (re-exported)


@pytest.fixture(scope="session")
def deb() -> Path:
    path = os.environ.get("PUSH_SERVER_DEB")
    if not path:
        pytest.fail("PUSH_SERVER_DEB is not set: run `make test-deb`, which builds the package and names it")
    if not Path(path).is_file():
        pytest.fail(f"PUSH_SERVER_DEB={path} does not exist")
    return Path(path)


@pytest.fixture(scope="session")
def fields(deb) -> dict:
    """The control file's fields (`dpkg-deb -f`)."""
    out = subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True).stdout
    result, key = {}, None
    for line in out.splitlines():
        if line.startswith(" ") and key:
            result[key] += "\n" + line
        else:
            key, _, value = line.partition(":")
            result[key] = value.strip()
    return result


@pytest.fixture(scope="session")
def unpacked(deb, tmp_path_factory) -> Path:
    """The package's files (`dpkg-deb -x`) with its control area in DEBIAN/ (`dpkg-deb -e`)."""
    root = tmp_path_factory.mktemp("root")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    subprocess.run(["dpkg-deb", "-e", str(deb), str(root / "DEBIAN")], check=True)
    return root


@pytest.fixture(scope="session")
def binary(unpacked) -> Path:
    return unpacked / "usr" / "bin" / "push-server"


@pytest.fixture(scope="session")
def build_info(binary) -> dict:
    """`push-server version` of the packaged binary: version, commit, built."""
    lines = subprocess.run([str(binary), "version"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0].startswith("push-server "), lines
    info = {"version": lines[0].removeprefix("push-server ")}
    for line in lines[1:]:
        key, _, value = line.partition(" ")
        info[key] = value
    return info


@pytest.fixture
def credentials(tmp_path) -> Path:
    """Throwaway files under the names the shipped unit's LoadCredential= gives them, as systemd would hand them to
    the service in $CREDENTIALS_DIRECTORY."""
    directory = tmp_path / "credentials"
    directory.mkdir()
    keys = tmp_path / "keys"
    keys.mkdir()
    p8, _ = write_apns_key(keys)
    cert, key = write_self_signed(keys)
    (directory / "instance-secret").write_text("package-test-secret-0123456789abcdef\n")
    (directory / "apns-key.p8").write_bytes(p8.read_bytes())
    (directory / "tls-cert.pem").write_bytes(cert.read_bytes())
    (directory / "tls-key.pem").write_bytes(key.read_bytes())
    return directory
