"""The packaged unit's commands under the unit's own sandbox (`make test-deb`): ExecStartPre (check-config) and
ExecStart (serve) started by Tests/deb/unit_sandbox.py as systemd 252 starts them: the unit's user, umask,
credentials ($CREDENTIALS_DIRECTORY), state directory, no capabilities, no new privileges, and its seccomp filters
(SystemCallFilter=, SystemCallErrorNumber=, SystemCallArchitectures=, RestrictAddressFamilies=,
MemoryDenyWriteExecute=, RestrictNamespaces=, LockPersonality=) built with Debian's libseccomp from the unit text
in the .deb, with the @sets as `systemd-analyze syscall-filter` defines them.

The service user here is `nobody` (the package's `push-server` user does not exist on a build machine); changing
user needs root, so without root these tests are skipped, visibly."""
import errno
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import free_port, start_on_free_ports

UNIT = "lib/systemd/system/push-server.service"
BACKTRACER = "usr/libexec/push-server/swift-backtrace"  # the unit's SWIFT_BACKTRACE names it
CONFIG = "usr/share/push-server/config.json"  # the sample postinst installs as /etc/push-server/config.json
RUNNER = Path(__file__).with_name("unit_sandbox.py")
SIGSYS = signal.SIGSYS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="running a command as the unit's user needs root")

# Drop-ins (text appended to the unit, as `systemctl edit` would) for the variants below.
AS_SHIPPED = ""
# Any call outside the unit's list kills the process, except setpriority (which the unit allows; the drop-in keeps
# it allowed whatever the unit says): the commands still pass, so nothing else they call on these paths is outside
# the list (and merely refused).
KILL_OUTSIDE_THE_LIST = "[Service]\nSystemCallErrorNumber=\nSystemCallFilter=setpriority\n"
# The filter as 0.1.0 shipped it: @resources (setpriority among them) denied, and denial kills.
# The drop-in empties the unit's list and states 0.1.0's again, without the later `SystemCallFilter=setpriority`.
FILTER_OF_0_1_0 = ("[Service]\nSystemCallErrorNumber=\nSystemCallFilter=\nSystemCallFilter=@system-service\n"
                   "SystemCallFilter=~@privileged @resources\n")


class Sandbox:
    """A directory the service user can enter, holding the packaged binary, a config and the unit's state
    directory, and the command line that starts one of the unit's commands in the unit's sandbox."""

    def __init__(self, unpacked: Path, credentials: Path, config: dict):
        self.root = Path(tempfile.mkdtemp(prefix="push-server-unit-"))
        self.root.chmod(0o755)  # pytest's own temporary directories are 0700: the service user could not enter
        self.binary = self.root / "push-server"
        self.backtracer = self.root / "swift-backtrace"
        for packaged, copy in ((unpacked / "usr/bin/push-server", self.binary),
                               (unpacked / BACKTRACER, self.backtracer)):
            try:
                os.link(packaged, copy)
            except OSError:
                shutil.copy2(packaged, copy)
        self.unit = unpacked / UNIT
        self.credentials = credentials
        self.state = self.root / "state"
        self.config = self.root / "config.json"
        self.config.write_text(json.dumps(config))
        self.config.chmod(0o644)
        self.notify_path = self.root / "notify"
        self.runs = 0

    def command(self, setting: str, drop_in: str = "", notify: bool = False) -> list:
        self.runs += 1
        runtime = self.root / f"run-{self.runs}"
        args = [sys.executable, RUNNER, self.unit, "--command", setting, "--user", "nobody", "--group", "nogroup",
                "--map", f"/usr/bin/push-server={self.binary}", "--map", f"/{BACKTRACER}={self.backtracer}",
                "--map", f"/etc/push-server/config.json={self.config}",
                "--map", f"/var/lib/push-server={self.state}", "--credentials-from", self.credentials,
                "--runtime-directory", runtime]
        if drop_in:
            path = self.root / f"drop-in-{self.runs}.conf"
            path.write_text(drop_in)
            args += ["--drop-in", path]
        if notify:
            args += ["--notify-socket", self.notify_path]
        return [str(a) for a in args]

    def notify_socket(self) -> socket.socket:
        """$NOTIFY_SOCKET as systemd's: a datagram socket the service user may write to, passing the sender's
        credentials (NotifyAccess=main: only the main process counts)."""
        if self.notify_path.exists():
            self.notify_path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(self.notify_path))
        self.notify_path.chmod(0o777)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        return sock

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def receive(sock: socket.socket, timeout: float):
    """One notification: (text, sender pid), or None after `timeout`."""
    sock.settimeout(timeout)
    try:
        data, ancillary, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(12))
    except (socket.timeout, BlockingIOError):
        return None
    pid = None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, _uid, _gid = struct.unpack("iII", payload[:12])
    return data.decode(), pid


def outcome(returncode: int) -> str:
    return f"killed by {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"


@pytest.fixture
def sandbox(unpacked, credentials):
    # The shipped config, with only its listeners (free loopback ports) and the database file (in the state
    # directory the runner creates for StateDirectory=) moved.
    config = json.loads((unpacked / CONFIG).read_text())
    config["listen"].update({"host": "127.0.0.1", "port": free_port()})
    config["ops"]["listen"] = f"127.0.0.1:{free_port()}"
    box = Sandbox(unpacked, credentials, config)
    config["storage"]["path"] = str(box.state / "push.sqlite")
    box.config.write_text(json.dumps(config))
    yield box
    box.remove()


def check_config(box: Sandbox, drop_in: str):
    result = subprocess.run(box.command("ExecStartPre", drop_in), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"check-config: {outcome(result.returncode)}\n{result.stderr}"
    assert result.stdout.startswith(f"OK: {box.config} (1 instance)"), result.stdout
    # The database is only opened by serve.
    assert not (box.state / "push.sqlite").exists()


def start_serving(box: Sandbox, drop_in: str):
    """ExecStart (serve) in the unit's sandbox, on free ports, once it sent READY=1: (process, config, notify
    socket, log path, the notifications so far)."""
    config = json.loads(box.config.read_text())
    notify = box.notify_socket()
    log = box.root / "serve.log"
    messages = []

    def start(port, ops_port):
        config["listen"]["port"], config["ops"]["listen"] = port, f"127.0.0.1:{ops_port}"
        box.config.write_text(json.dumps(config))
        proc = subprocess.Popen(box.command("ExecStart", drop_in, notify=True), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
        deadline = time.monotonic() + 60
        while not any("READY=1" in text for text, _ in messages):
            message = receive(notify, 0.5)
            if message is not None:
                messages.append(message)
            elif proc.poll() is not None:
                # Its port taken meanwhile (start_on_free_ports reads the log and tries others), or a failure.
                raise RuntimeError(f"serve: {outcome(proc.returncode)}\n{log.read_text()}")
            else:
                assert time.monotonic() < deadline, f"no READY=1 within 60 s\n{log.read_text()}"
        return proc

    ops_port = int(config["ops"]["listen"].rpartition(":")[2])
    proc, _ = start_on_free_ports(start, log, [config["listen"]["port"], ops_port])
    return proc, config, notify, log, messages


def serve(box: Sandbox, drop_in: str, build_info: dict):
    proc, config, notify, log, messages = start_serving(box, drop_in)
    try:
        # NotifyAccess=main: READY=1 must come from the main process itself (the runner execs into it).
        assert [pid for text, pid in messages if "READY=1" in text] == [proc.pid]

        base = f"https://127.0.0.1:{config['listen']['port']}"
        health = requests.get(f"{base}/health", verify=str(box.credentials / "tls-cert.pem"), timeout=10)
        assert health.status_code == 200
        assert health.json()["version"] == build_info["version"]

        # The state directory: the user's, 0700 (StateDirectoryMode=), and nothing in it open to others (UMask=).
        state = box.state.stat()
        assert (state.st_uid, state.st_mode & 0o777) == (65534, 0o700)
        files = list(box.state.iterdir())
        assert box.state / "push.sqlite" in files
        for path in files:
            assert (path.stat().st_uid, path.stat().st_mode & 0o077) == (65534, 0), path

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, f"serve: {outcome(proc.returncode)}\n{log.read_text()}"
        while (message := receive(notify, 0.5)) is not None:
            messages.append(message)
        assert any("STOPPING=1" in text for text, _ in messages), messages
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()


@pytest.mark.parametrize("drop_in", [AS_SHIPPED, KILL_OUTSIDE_THE_LIST], ids=["as-shipped", "kill-outside-the-list"])
def test_unit_commands_run_under_the_units_sandbox(sandbox, build_info, drop_in):
    check_config(sandbox, drop_in)
    serve(sandbox, drop_in, build_info)


def test_a_crash_under_the_units_sandbox_writes_every_threads_stack_to_the_log(sandbox):
    # The unit turns the Swift runtime's backtracer on and names the one the package ships; the runtime starts it
    # from inside the sandbox (no new privileges, the seccomp filters, the service user), and it reads the crashed
    # process through the memory server the runtime starts in it (no ptrace). A fault's SIGSEGV comes back when the
    # handler returns and ends the process; one sent with kill(2) does not, so the process lives on after its
    # backtrace and is killed here.
    proc, _, notify, log, _ = start_serving(sandbox, AS_SHIPPED)
    try:
        proc.send_signal(signal.SIGSEGV)
        deadline = time.monotonic() + 60
        while "Backtrace took" not in log.read_text(errors="replace"):
            assert proc.poll() is None or "Backtrace took" in log.read_text(errors="replace"), (
                f"serve: {outcome(proc.returncode)} without a backtrace\n{log.read_text(errors='replace')[-3000:]}")
            assert time.monotonic() < deadline, f"no backtrace within 60 s\n{log.read_text(errors='replace')[-3000:]}"
            time.sleep(0.2)
        text = log.read_text(errors="replace")
        assert "*** Program crashed" in text and "crashed:" in text, text[-3000:]
        assert "store-writer" in text and "http-loop-" in text, text[-3000:]  # every thread, by its name
        assert "push-server" in text, text[-3000:]  # frames symbolicated in the stripped binary's own code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()


def test_the_0_1_0_filter_kills_check_config_with_sigsys(sandbox):
    # The bug this unit fixes, kept as a check that the sandbox bites: with @resources denied and denial killing,
    # Dispatch's setpriority on its first thread ends check-config (and systemd retried it every 2 s forever).
    result = subprocess.run(sandbox.command("ExecStartPre", FILTER_OF_0_1_0), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == -SIGSYS, outcome(result.returncode)


def has_cap_sys_resource():
    """Whether this (root) process may raise a hard resource limit: CAP_SYS_RESOURCE, bit 24 of CapEff."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16) >> 24 & 1 == 1
    return False


def test_the_sandbox_applies_the_units_restrictions(sandbox):
    """The runner applies what the unit says, seen from inside: a process started as the unit's ExecStart."""
    probe = sandbox.root / "probe.py"
    probe.write_text(
        "import ctypes, json, mmap, os, resource, socket\n"
        "def refused(call):\n"
        "    try:\n"
        "        call()\n"
        "    except OSError as error:\n"
        "        return error.errno\n"
        "    return 0\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def c(name, *args):\n"
        "    if getattr(libc, name)(*args) == -1:\n"
        "        raise OSError(ctypes.get_errno(), name)\n"
        "status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines() if ':\\t' in line)\n"
        "print(json.dumps({\n"
        "    'uid': os.getuid(), 'gid': os.getgid(), 'umask': os.umask(0o077), 'cwd': os.getcwd(),\n"
        "    'credentials': sorted(os.listdir(os.environ['CREDENTIALS_DIRECTORY'])),\n"
        "    'credentials_mode': os.stat(os.environ['CREDENTIALS_DIRECTORY']).st_mode & 0o777,\n"
        "    'state_directory': os.environ.get('STATE_DIRECTORY'),\n"
        "    'no_new_privs': status['NoNewPrivs'].strip(), 'seccomp': status['Seccomp'].strip(),\n"
        "    'cap_bounding': status['CapBnd'].strip(), 'cap_effective': status['CapEff'].strip(),\n"
        "    'sched_setaffinity': refused(lambda: os.sched_setaffinity(0, {0})),\n"  # @resources: EPERM
        "    'setpriority': refused(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1)),\n"  # allowed again: nice 1
        # Back from bulk priority to nice 0 (LimitNICE=+0), as the server's senders return after a fan-out
        # (ThreadPriority.mayReturnToNormal decides from the same limit whether to lower them at all).
        "    'setpriority_back_to_0': refused(lambda: (os.setpriority(os.PRIO_PROCESS, 0, 10),\n"
        "                                              os.setpriority(os.PRIO_PROCESS, 0, 0))),\n"
        "    'nice_limit': resource.getrlimit(resource.RLIMIT_NICE)[0],\n"
        "    'setpriority_below_0': refused(lambda: os.setpriority(os.PRIO_PROCESS, 0, -1)),\n"  # no CAP_SYS_NICE
        "    'af_packet': refused(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)),\n"
        "    'af_inet6': refused(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()),\n"
        "    'write_execute': refused(lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC)),\n"
        "    'unshare': refused(lambda: c('unshare', 0x04000000)),\n"  # CLONE_NEWUTS
        "    'personality': refused(lambda: c('personality', 0x0008)),\n"
        "}))\n")
    probe.chmod(0o644)
    drop_in = f"[Service]\nExecStart=\nExecStart=/usr/bin/python3 {probe}\n"
    result = subprocess.run(sandbox.command("ExecStart", drop_in), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{outcome(result.returncode)}\n{result.stderr}"
    seen = json.loads(result.stdout)
    unit = (sandbox.unit).read_text()
    # LimitNICE=+0 is RLIMIT_NICE 20, back to nice 0 and never below; where this machine's root may not raise the
    # hard limit (no CAP_SYS_RESOURCE), the runner sets the closest it can, as systemd does, and the way back is
    # refused: the server then never lowers its senders (ThreadPriority.mayReturnToNormal, the same rule).
    hard = resource.getrlimit(resource.RLIMIT_NICE)[1]
    nice_limit = 20 if hard == resource.RLIM_INFINITY or has_cap_sys_resource() else min(20, hard)
    back_to_0 = 0 if nice_limit >= 20 else errno.EACCES
    loaded = sorted(line.split("=", 1)[1].split(":", 1)[0] for line in unit.splitlines()
                    if line.startswith("LoadCredential="))
    assert seen == {
        "uid": 65534, "gid": 65534, "umask": 0o077, "cwd": str(sandbox.state),
        "credentials": loaded, "credentials_mode": 0o500, "state_directory": str(sandbox.state),
        "no_new_privs": "1", "seccomp": "2", "cap_bounding": "0000000000000000", "cap_effective": "0000000000000000",
        "sched_setaffinity": 1, "setpriority": 0, "setpriority_back_to_0": back_to_0, "nice_limit": nice_limit,
        "setpriority_below_0": 13, "af_packet": 97, "af_inet6": 0,
        "write_execute": 1, "unshare": 1, "personality": 1,
    }
