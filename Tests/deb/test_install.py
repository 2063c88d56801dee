"""The package installed and upgraded by dpkg as unattended upgrades run it: no terminal (stdin is /dev/null) and
DEBIAN_FRONTEND=noninteractive, so any question dpkg asked would fail the install. Each test installs into a
throwaway root (`dpkg --root`, maintainer scripts run outside a chroot with DPKG_ROOT set, which they honour), so
this machine's own dpkg database and /etc are never touched. Dependencies (libc6, libcurl4, …) are not installed in
that root: --force-depends.

The packages are the built one and copies of it repacked uncompressed (`dpkg-deb -Znone`, so that each install
skips the xz step) with another version and, where an upgrade changes it, another sample config."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SAMPLE = "usr/share/push-server/config.json"
CONFIG = "etc/push-server/config.json"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dpkg installs files owned by root: needs root")


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="session")
def tree(deb, tmp_path_factory) -> Path:
    """The package's files and control area (`dpkg-deb -R`), to repack."""
    root = tmp_path_factory.mktemp("tree") / "push-server"
    result = run("dpkg-deb", "-R", deb, root)
    assert result.returncode == 0, result.stderr
    return root


def shipped_sample(tree: Path) -> str:
    """Where the package ships its sample: SAMPLE, or (0.1.0's layout) CONFIG as a conffile."""
    conffiles = tree / "DEBIAN/conffiles"
    return CONFIG if conffiles.exists() and f"/{CONFIG}" in conffiles.read_text().split() else SAMPLE


def repack(tree: Path, out: Path, version: str, sample=None, conffile_layout=False) -> Path:
    """A copy of the package with `version`, its sample config replaced by `sample` (a dict) when given, and with
    `conffile_layout` the config shipped as 0.1.0 shipped it: /etc/push-server/config.json, a conffile."""
    work = out / f"tree-{version}"
    shutil.copytree(tree, work, symlinks=True)
    control = work / "DEBIAN/control"
    control.write_text("".join(f"Version: {version}\n" if line.startswith("Version:") else line
                               for line in control.read_text().splitlines(keepends=True)))
    sample_path = work / shipped_sample(tree)
    if sample is not None:
        sample_path.write_text(json.dumps(sample, indent=2) + "\n")
    if conffile_layout and shipped_sample(tree) == SAMPLE:
        (work / CONFIG).write_bytes(sample_path.read_bytes())
        sample_path.unlink()
        shutil.rmtree(work / "usr/share/push-server/grafana")  # 0.1.0 shipped no dashboard either
        (work / "usr/share/push-server").rmdir()
        (work / "DEBIAN/conffiles").write_text(f"/{CONFIG}\n")
    path = CONFIG if conffile_layout else shipped_sample(tree)
    sums = [line for line in (work / "DEBIAN/md5sums").read_text().splitlines()
            if not line.endswith((SAMPLE, CONFIG)) and not (conffile_layout and "/grafana/" in line)]
    digest = run("md5sum", work / path).stdout.split()[0]
    (work / "DEBIAN/md5sums").write_text("\n".join(sums + [f"{digest}  {path}"]) + "\n")
    deb = out / f"push-server_{version}.deb"
    result = run("dpkg-deb", "--root-owner-group", "-Znone", "-b", work, deb)
    assert result.returncode == 0, result.stderr
    shutil.rmtree(work)
    return deb


class Root:
    """An empty system for dpkg --root."""

    def __init__(self, path: Path):
        self.path = path
        for directory in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc"]:
            (path / directory).mkdir(parents=True)
        for name in ["var/lib/dpkg/status", "var/lib/dpkg/available"]:
            (path / name).touch()

    def dpkg(self, *args):
        """dpkg as unattended-upgrades runs it: stdin is not a terminal, nothing may ask."""
        return run("dpkg", f"--root={self.path}", "--force-script-chrootless", "--force-depends", "--force-unsafe-io",
                   *args, stdin=subprocess.DEVNULL,
                   env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"})

    def install(self, deb):
        result = self.dpkg("-i", deb)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Configuration file" not in result.stdout, result.stdout  # dpkg's conffile question
        assert self.status() == "install ok installed"
        return result

    def status(self):
        return run("dpkg-query", f"--root={self.path}", "-W", "-f=${Status}", "push-server").stdout

    def __truediv__(self, name):
        return self.path / name


def test_unattended_upgrade_with_a_changed_sample_keeps_the_administrators_config(tree, tmp_path, build_info):
    root = Root(tmp_path / "root")
    sample = json.loads((tree / shipped_sample(tree)).read_text())
    root.install(repack(tree, tmp_path, build_info["version"]))
    assert json.loads((root / CONFIG).read_text()) == sample
    assert (root / CONFIG).stat().st_mode & 0o777 == 0o644

    # The administrator configures; the next release changes the sample. The upgrade must finish on its own.
    mine = (root / CONFIG).read_text().replace("com.example.app", "com.mycompany.app")
    (root / CONFIG).write_text(mine)
    changed = {**sample, "log": {"level": "notice"}}
    root.install(repack(tree, tmp_path, build_info["version"] + "+next1", sample=changed))
    assert (root / CONFIG).read_text() == mine
    assert json.loads((root / shipped_sample(tree)).read_text()) == changed
    assert not list((root / "etc/push-server").glob("config.json.*"))  # no .dpkg-dist, .dpkg-old, .new

    # Purge removes the config made from the sample, and keeps what the administrator put beside it.
    (root / "etc/push-server/instance-secret").write_text("secret\n")
    result = root.dpkg("--purge", "push-server")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (root / CONFIG).exists() and (root / "etc/push-server/instance-secret").exists()


def test_upgrade_from_the_0_1_0_conffile_layout_keeps_the_config(tree, tmp_path, build_info):
    root = Root(tmp_path / "root")
    root.install(repack(tree, tmp_path, "0.1.0", conffile_layout=True))
    mine = (root / CONFIG).read_text().replace("com.example.app", "com.mycompany.app")
    (root / CONFIG).write_text(mine)

    root.install(repack(tree, tmp_path, build_info["version"]))
    assert (root / CONFIG).read_text() == mine
    # dpkg keeps a conffile the new version no longer ships, marked obsolete, and never asks about it again.
    conffiles = run("dpkg-query", f"--root={root.path}", "-W", "-f=${Conffiles}", "push-server").stdout
    assert f"/{CONFIG}" in conffiles and "obsolete" in conffiles
