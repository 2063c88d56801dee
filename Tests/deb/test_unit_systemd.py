"""The packaged unit started by a real systemd (`make test-deb`): systemd 252 as PID 1 of fresh PID, mount and
cgroup namespaces (Tests/deb/systemd_boot.sh), with the package's binary, unit and sysusers file laid over this
machine's / inside the mount namespace only. systemd reads the unit exactly as packaged and applies all of it: the
user, LoadCredential=, StateDirectory=, ProtectSystem=, PrivateTmp=, the seccomp filters, Type=notify. Booting takes
about a second; nothing of this machine's own services starts (SYSTEMD_UNIT_PATH holds only the units named here).

Needs root, unshare(1) and a cgroup2 hierarchy to delegate (the unified one of a hybrid host, or /sys/fs/cgroup);
without them the test is skipped, visibly."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import free_port

UNIT = "lib/systemd/system/push-server.service"
SAMPLE = "usr/share/push-server/config.json"
BOOT = Path(__file__).with_name("systemd_boot.sh")
SYSTEMD = Path("/lib/systemd/systemd")
# Units the packaged unit names (Wants=, After=, and systemd's default dependencies), as empty targets, and journald
# so that the service's output can be read when something fails.
TARGETS = ["sysinit", "basic", "shutdown", "network", "network-online", "sockets"]
JOURNALD = ["systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket"]


def cgroup_parent():
    """Where a cgroup2 sub-tree can be made for the namespace's systemd."""
    for path in [Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")]:
        if (path / "cgroup.procs").exists() and (path / "cgroup.subtree_control").exists():
            return path
    return None


def namespaces_work():
    """Whether this machine lets root make the namespaces (a container may not)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = ["unshare", "--pid", "--fork", "--mount", "--cgroup", "--uts", "--ipc", "--mount-proc", "true"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


pytestmark = pytest.mark.skipif(not SYSTEMD.exists() or cgroup_parent() is None or not namespaces_work(),
                                reason="needs root, systemd, a cgroup2 hierarchy, and PID/mount/cgroup namespaces")


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60, **kwargs)


class BootedSystemd:
    """systemd as PID 1 of its own namespaces, started on `stage` (see Tests/deb/systemd_boot.sh)."""

    def __init__(self, stage: Path):
        self.stage = stage
        self.cgroup = cgroup_parent() / f"push-server-test-{os.getpid()}-{time.monotonic_ns()}"
        self.cgroup.mkdir()
        self.proc = subprocess.Popen(
            ["bash", "-c", 'echo $$ > "$1/cgroup.procs" && exec unshare --pid --fork --kill-child --mount --cgroup '
             '--uts --ipc --mount-proc "$2" "$3"', "boot", str(self.cgroup), str(BOOT), str(stage)],
            stdin=subprocess.DEVNULL, stdout=open(stage / "boot.log", "wb"), stderr=subprocess.STDOUT)
        self.pid = None
        try:
            deadline = time.monotonic() + 30
            while self.pid is None:
                assert self.proc.poll() is None, (stage / "boot.log").read_text()
                assert time.monotonic() < deadline, "systemd did not start"
                children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
                if children and Path(f"/proc/{children[0]}/comm").read_text().strip() == "systemd":
                    self.pid = int(children[0])
                else:
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def inside(self, *args):
        """A command in the namespaces' mounts and PIDs (systemctl reaches systemd through /run/systemd/private)."""
        return run("nsenter", "-t", self.pid, "-m", "-p", *args)

    def show(self, unit, *properties):
        out = self.inside("systemctl", "show", unit, *[f"--property={p}" for p in properties]).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit):
        """The unit's log, and the credentials directory as systemd left it: what to read when a start fails."""
        log = self.inside("journalctl", "--no-pager", "-u", unit, "-o", "short-monotonic").stdout
        credentials = self.inside("ls", "-lan", f"/run/credentials/{unit}").stdout
        mounts = self.inside("findmnt", "-n", "-o", "TARGET,FSTYPE,OPTIONS", "-R", "/run/credentials").stdout
        return f"{log}\n/run/credentials/{unit}:\n{credentials}\n{mounts}"

    def stop(self):
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)  # PID 1 of the namespace: every process in it goes too
            except ProcessLookupError:
                pass
        self.proc.kill()
        self.proc.wait()
        for path in sorted(self.cgroup.rglob("*"), key=lambda p: len(p.parts), reverse=True) + [self.cgroup]:
            if path.is_dir():
                for _ in range(50):
                    try:
                        path.rmdir()
                        break
                    except OSError:
                        time.sleep(0.05)


@pytest.fixture
def stage(unpacked, credentials):
    """The package's files for the booted system, and the config with free loopback ports."""
    root = Path(tempfile.mkdtemp(prefix="push-server-systemd-"))
    unit_text = (unpacked / UNIT).read_text()
    shutil.copy2(unpacked / "usr/bin/push-server", root / "push-server")
    shutil.copy2(unpacked / "usr/lib/sysusers.d/push-server.conf", root / "push-server.sysusers")
    etc = root / "etc" / "push-server"
    etc.mkdir(parents=True)
    config = json.loads((unpacked / SAMPLE).read_text())
    config["listen"].update({"host": "127.0.0.1", "port": free_port()})
    config["ops"]["listen"] = f"127.0.0.1:{free_port()}"
    (etc / "config.json").write_text(json.dumps(config))
    # Each LoadCredential= source where the unit names it (/etc/push-server/…), root-only as an administrator
    # keeps it.
    for name, source in re.findall(r"^LoadCredential=([^:\n]+):(\S+)$", unit_text, re.M):
        target = root / "etc" / Path(source).relative_to("/etc")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(credentials / name, target)
        target.chmod(0o600)
    units = root / "units"
    units.mkdir()
    (units / "push-server.service").write_text(unit_text)
    for name in TARGETS:
        (units / f"{name}.target").write_text(f"[Unit]\nDescription={name}\n")
    for name in JOURNALD:
        shutil.copy2(Path("/lib/systemd/system") / name, units / name)
    (units / "push-server-test.target").write_text(
        "[Unit]\nDescription=push-server under systemd\nWants=systemd-journald.socket push-server.service\n")
    yield root, config
    shutil.rmtree(root, ignore_errors=True)


def test_systemd_starts_the_packaged_unit_serves_and_stops_it_cleanly(stage, build_info):
    root, config = stage
    system = BootedSystemd(root)
    try:
        deadline, state = time.monotonic() + 90, {}
        while time.monotonic() < deadline:
            state = system.show("push-server.service", "ActiveState", "SubState", "NRestarts", "Result", "MainPID")
            if state.get("ActiveState") == "active" and state.get("SubState") == "running":
                break
            # A failed ExecStartPre shows as a restart (Restart=on-failure) or as failed: either is the bug.
            assert state.get("NRestarts", "0") == "0" and state.get("ActiveState") != "failed", \
                f"{state}\n{system.journal('push-server.service')}"
            time.sleep(0.2)
        assert state.get("SubState") == "running", f"{state}\n{system.journal('push-server.service')}"

        # Type=notify: "running" means READY=1 came; the server answers.
        base = f"https://127.0.0.1:{config['listen']['port']}"
        ca = root / "etc" / "push-server" / "tls" / "fullchain.pem"
        health = requests.get(f"{base}/health", verify=str(ca), timeout=10)
        assert health.status_code == 200 and health.json()["version"] == build_info["version"]

        # The main process as systemd made it: the package's system user, the umask, no new privileges, seccomp.
        status = system.inside("cat", f"/proc/{state['MainPID']}/status").stdout
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        uid = system.inside("id", "-u", "push-server").stdout.strip()
        assert fields["Uid"].split()[0] == uid and int(uid) < 1000
        assert fields["Umask"].strip() == "0077"
        assert fields["NoNewPrivs"].strip() == "1" and fields["Seccomp"].strip() == "2"
        assert fields["CapEff"].strip() == "0000000000000000"
        database = system.inside("stat", "-c", "%U %a", "/var/lib/push-server", "/var/lib/push-server/push.sqlite")
        assert database.stdout.split("\n")[:2] == ["push-server 700", "push-server 600"], database

        # ExecReload (SIGHUP) under the same sandbox: the config and its credentials are read again as the service
        # user, the process stays, and the reload is reported.
        reloaded = system.inside("systemctl", "reload", "push-server.service")
        assert reloaded.returncode == 0, f"{reloaded.stderr}\n{system.journal('push-server.service')}"
        deadline = time.monotonic() + 30
        while "Config reloaded" not in system.journal("push-server.service") and time.monotonic() < deadline:
            time.sleep(0.2)
        journal = system.journal("push-server.service")
        assert "Config reloaded" in journal and "Config reload refused" not in journal, journal
        after = system.show("push-server.service", "ActiveState", "SubState", "NRestarts", "MainPID")
        assert after == {"ActiveState": "active", "SubState": "running", "NRestarts": "0",
                         "MainPID": state["MainPID"]}, f"{after}\n{journal}"
        metrics = requests.get(f"http://{config['ops']['listen']}/metrics", timeout=10).text
        assert "push_config_reload_success 1" in metrics.splitlines(), metrics[-2000:]
        assert requests.get(f"{base}/health", verify=str(ca), timeout=10).status_code == 200

        stopped = system.inside("systemctl", "stop", "push-server.service")
        assert stopped.returncode == 0, stopped.stderr
        state = system.show("push-server.service", "ActiveState", "Result", "ExecMainCode", "ExecMainStatus",
                            "NRestarts")
        assert state == {"ActiveState": "inactive", "Result": "success", "ExecMainCode": "1",
                         "ExecMainStatus": "0", "NRestarts": "0"}, f"{state}\n{system.journal('push-server.service')}"
    finally:
        system.stop()
