"""The end-to-end harness: the real push-server binary over TLS against the strict mock APNs.

Shared by the pytest fixtures (conftest.py) and the reliability scripts (bench/reliability/). Nothing here talks
to the internet: the server's APNs endpoint is overridden to the local mock.
"""
import datetime
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "Support"))
from free_port import free_port, start_on_free_ports  # noqa: E402  (re-exported: the tests import them from here)
MOCK = ROOT / "Tests" / "Support" / "mock_apns.py"
# A stand-in's control API answers from the same Python process that serves the server's traffic: under a loaded CI
# machine and a fan-out of thousands it answered a /stats after more than 5 s, so its calls wait up to this.
CONTROL_TIMEOUT = 30
INSTANCE_ID = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
SECRET = "sdk-test-secret-0123456789abcdef"
TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
TOPIC = "com.example.sdktest"


def write_self_signed(directory: Path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def write_apns_key(directory: Path):
    key = ec.generate_private_key(ec.SECP256R1())
    p8, pub = directory / "AuthKey.p8", directory / "AuthKey.pub.pem"
    p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return p8, pub


def wait_logged(log_path: Path, expected, timeout=10):
    """The text of the log at `log_path` once it holds `expected` (a string, or a predicate on the whole text).

    A running push-server writes its log from a thread of its own (Sources/Logging/BufferedLogSink.swift), so a line
    can reach the file after the effect a test saw first (a response, a metric, a mock's request). Not needed once
    the process has exited: it flushes the sink before it exits. - Raises: AssertionError with the log's tail."""
    holds = expected if callable(expected) else (lambda text: expected in text)
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text() if log_path.exists() else ""
        if holds(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"not logged within {timeout} s: {expected!r}\n{text[-3000:]}")
        time.sleep(0.05)


def server_binary():
    """The push-server under test: `PUSH_SERVER_BIN`, else the release build."""
    return os.environ.get("PUSH_SERVER_BIN", str(ROOT / ".build" / "release" / "push-server"))


class StartFailed(RuntimeError):
    """`serve` gave up: `proc` is the process that did not become healthy (exited, or killed by `serve`), so a
    caller can still read its exit status."""

    def __init__(self, message, proc):
        super().__init__(message)
        self.proc = proc


# Signals a process dies of when it crashes (not when it is killed): a server that exits with one fails the test
# that started it, with the backtrace its log holds (`with_crash_backtraces`, `Environment.close`).
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGTRAP, signal.SIGFPE}


def crashed(returncode):
    """Whether `returncode` (a Popen's) says the process died of a crash signal."""
    return returncode is not None and returncode < 0 and -returncode in CRASH_SIGNALS


def swift_backtracer():
    """The toolchain's static crash backtracer (`swift-backtrace-static`, beside the `swift` on PATH), or None.
    The static one serves the release binary too, which links the Swift runtime statically and so cannot find the
    backtracer next to a runtime library of its own."""
    swift = shutil.which("swift")
    if swift is None:
        return None
    backtracer = Path(swift).resolve().parent.parent / "libexec" / "swift" / "linux" / "swift-backtrace-static"
    return str(backtracer) if backtracer.exists() else None


def with_crash_backtraces(environ):
    """`environ` (default: this process's) with the Swift runtime's backtracer switched on, so a server that crashes
    writes every thread's stack to its log (stderr) before it dies: a rare crash on a CI machine then leaves what
    its cause needs, where pytest shows it. Left as it is when it sets `SWIFT_BACKTRACE` itself or no backtracer
    is installed."""
    environ = dict(os.environ if environ is None else environ)
    backtracer = swift_backtracer()
    if backtracer and "SWIFT_BACKTRACE" not in environ:
        environ["SWIFT_BACKTRACE"] = f"enable=yes,interactive=no,color=no,swift-backtrace={backtracer}"
    return environ


def serve(config_path, log_path: Path, health_url, stdout=None, verify=True, environ=None):
    """Starts `push-server serve --config config_path`, its stderr appended to `log_path`, and returns the process
    once `health_url` answers 200. `environ`: the process's whole environment (default: this one's), with crash
    backtraces on (`with_crash_backtraces`).
    - Raises: `StartFailed` (a RuntimeError, as `wait_healthy`), the process killed first (so `start_on_free_ports`
    can try another port)."""
    proc = subprocess.Popen([server_binary(), "serve", "--config", str(config_path)], stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=open(log_path, "ab"), env=with_crash_backtraces(environ))
    try:
        wait_healthy(proc, health_url, log_path, verify=verify)
    except RuntimeError as failure:
        proc.kill()
        proc.wait()
        raise StartFailed(str(failure), proc) from failure
    return proc


def wait_healthy(proc, url, log_path: Path, timeout=20, verify=True):
    """Waits until `url` (a /health) answers 200. - Raises: RuntimeError when `proc` exits first (with the tail of
    `log_path`, which `start_on_free_ports` reads for EADDRINUSE) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"push-server exited: {log_path.read_text()[-2000:]}")
        try:
            if requests.get(url, verify=verify, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"push-server did not become healthy within {timeout} s: {log_path.read_text()[-2000:]}")


class Mock:
    """The strict mock APNs (Tests/Support/mock_apns.py) and its control API."""

    def __init__(self, directory: Path, public_key: Path, extra_args=()):
        self.proc = subprocess.Popen(
            [sys.executable, str(MOCK), "--port", "0", "--team-id", TEAM_ID, "--key", f"{KEY_ID}={public_key}",
             "--topic", TOPIC, "--environment", "sandbox", *extra_args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(directory / "mock.log", "wb"),
        )
        info = json.loads(self.proc.stdout.readline())
        self.port, self.control_port, self.ca_file = info["port"], info["control_port"], info["ca_file"]
        self.control = f"http://127.0.0.1:{self.control_port}"

    def requests(self):
        return requests.get(f"{self.control}/requests", timeout=CONTROL_TIMEOUT).json()

    def stats(self):
        return requests.get(f"{self.control}/stats", timeout=CONTROL_TIMEOUT).json()

    def behave(self, token, **behaviour):
        requests.put(f"{self.control}/behaviours/{token}", json=behaviour, timeout=CONTROL_TIMEOUT).raise_for_status()

    def requests_for(self, token):
        return requests.get(f"{self.control}/requests", params={"token": token}, timeout=CONTROL_TIMEOUT).json()

    def configure(self, **config):
        response = requests.put(f"{self.control}/config", json=config, timeout=CONTROL_TIMEOUT)
        response.raise_for_status()
        return response.json()

    def reset(self):
        requests.post(f"{self.control}/reset", timeout=CONTROL_TIMEOUT).raise_for_status()

    def goaway_all(self):
        """GOAWAY to every open connection: the server's next requests open new, cold ones."""
        requests.post(f"{self.control}/connections/goaway", timeout=CONTROL_TIMEOUT).raise_for_status()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


# Every e2e client connects from 127.0.0.1, and the suites register hundreds to thousands of devices per module,
# far more than one real client address sends. So the harness lifts the per-address limit by default;
# test_abuse_limits.py sets its own `limits` and exercises it (and the per-instance limits keep their defaults).
E2E_LIMITS = {"ipRequestsPerSecond": 0}
# Load tests (bulk registration through bulk.py as fast as the server takes it) also lift the per-instance device
# API limit; pass as `{"limits": LOAD_TEST_LIMITS}` in `overrides`.
LOAD_TEST_LIMITS = {**E2E_LIMITS, "deviceRequestsPerSecondPerInstance": 0}

# A second instance without APNs credentials: its publishes are accepted and recorded as not sent.
NO_CREDENTIALS_INSTANCE_ID = "0d6e4b7a-93c1-4f25-b1aa-5c2f0e8d7a61"
NO_CREDENTIALS_SECRET = "sdk-test-secret-no-credentials-0123"


def store_config(directory: Path):
    """The `storage` section: SQLite in `directory`, or with `PUSH_TEST_STORE=postgresql` a database of its own in the
    test run's throwaway PostgreSQL cluster (Tests/Support/postgresql_cluster.py)."""
    if os.environ.get("PUSH_TEST_STORE", "sqlite") != "postgresql":
        return {"path": str(directory / "push.sqlite")}
    import postgresql_cluster
    return postgresql_cluster.storage_section()


def postgresql_cluster_or_skip_module():
    """`Tests/Support/postgresql_cluster.py`, for a test module that needs PostgreSQL: called at the module's top
    level, it skips the whole module when PostgreSQL 15 is not installed, except on CI (`CI=true`), where the
    module runs and fails instead of passing silently."""
    import postgresql_cluster
    if not postgresql_cluster.installed() and os.environ.get("CI") != "true":
        import pytest
        pytest.skip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure",
                    allow_module_level=True)
    return postgresql_cluster


class Server:
    """A push-server process with one instance pointed at the mock (and one without credentials): over TLS when
    given a certificate and key, plain HTTP otherwise.

    `overrides` are merged into the top level of the config (e.g. `{"apns": {...}}`, or `{"webhooks": {...}}`
    instead of the default that allows webhooks to 127.0.0.1), `instance_overrides` into the first instance (e.g.
    `{"webhook": {...}}`), `limits` into `limits` (over `E2E_LIMITS`); `extra_instances` are appended. A `limits`
    key in `overrides` replaces the whole section, defaults included."""

    def __init__(self, directory: Path, mock: Mock, p8: Path, cert: Path = None, key: Path = None, overrides=None,
                 instance_overrides=None, limits=None, extra_instances=(), environ=None):
        self.port = free_port()
        self.environ = environ
        self.directory = directory
        self.cert = str(cert) if cert else None
        self.base = f"{'https' if cert else 'http'}://localhost:{self.port}"
        listen = {"host": "127.0.0.1", "port": self.port}
        if cert:
            listen["tls"] = {"certificatePath": str(cert), "privateKeyPath": str(key)}
        config = {
            "listen": listen,
            "storage": store_config(directory),
            "log": {"level": "info"},
            # The tests' webhook receivers listen on 127.0.0.1, which the destination policy refuses by default.
            "webhooks": {"allowedDestinations": ["127.0.0.1"]},
            "instances": [{
                "id": INSTANCE_ID, "secretKey": SECRET,
                "apns": {"teamId": TEAM_ID, "keyId": KEY_ID, "keyPath": str(p8), "topic": TOPIC,
                         "defaultEnvironment": "sandbox",
                         "endpointOverride": f"https://127.0.0.1:{mock.port}", "caFile": mock.ca_file},
            }, {
                "id": NO_CREDENTIALS_INSTANCE_ID, "secretKey": NO_CREDENTIALS_SECRET,
            }],
        }
        config["instances"][0].update(instance_overrides or {})
        config["instances"] += [dict(instance) for instance in extra_instances]
        config["limits"] = {**E2E_LIMITS, **(limits or {})}
        config.update(overrides or {})
        self.config_path = directory / "config.json"
        self.config_path.write_text(json.dumps(config))
        self.log_path = directory / "server.log"
        self.proc = None
        # This server's processes that died of a crash signal (`Environment.close` fails on any).
        self.crashes = []
        self.start()

    @property
    def binary(self):
        return server_binary()

    def start(self):
        """Starts the process and waits for /health. A port taken since it was picked (parallel workers can draw the
        same one; Tests/Support/free_port.py) is replaced by another and the start tried again, a few times: the
        listener's port and, if the config has one on loopback, the ops listener's (`ops_port`)."""
        ports = [self.port] + ([self.ops_port] if self.ops_port else [])
        start_on_free_ports(self._start_on, self.log_path, ports)

    @property
    def ops_port(self):
        """The ops listener's port when the config puts one on 127.0.0.1, else None."""
        listen = json.loads(self.config_path.read_text()).get("ops", {}).get("listen", "")
        return int(listen.rpartition(":")[2]) if listen.startswith("127.0.0.1:") else None

    def ops_url(self, path):
        return f"http://127.0.0.1:{self.ops_port}{path}"

    def _start_on(self, port, ops_port=None):
        self._note_exit()
        config = json.loads(self.config_path.read_text())
        if port != self.port or ops_port != self.ops_port:
            config["listen"]["port"] = port
            if ops_port:
                config["ops"]["listen"] = f"127.0.0.1:{ops_port}"
            self.config_path.write_text(json.dumps(config))
            self.base = self.base.replace(f":{self.port}", f":{port}")
            self.port = port
        try:
            self.proc = serve(self.config_path, self.log_path, f"{self.base}/health", verify=self.cert or True,
                              environ=self.environ)
        except StartFailed as failure:
            # The failed process, not the one before it: a test asserts on how a refused start exited.
            self.proc = failure.proc
            raise

    def wait_logged(self, expected, timeout=10):
        """The server's log once it holds `expected` (a string or a predicate on the text; see `wait_logged`)."""
        return wait_logged(self.log_path, expected, timeout)

    def url(self, path):
        return f"{self.base}{path}"

    def stop(self, sig=None):
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._note_exit()
        return self.proc.returncode

    def _note_exit(self):
        """Records the current process if it died of a crash signal (once)."""
        if self.proc is not None and crashed(self.proc.poll()) and self.proc not in self.crashes:
            self.crashes.append(self.proc)

    def log_tail(self, chars=8000):
        """The end of the server's log, for an assertion's message (a crash's backtrace ends up there)."""
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def kill9(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


def write_vapid_key(directory: Path):
    """A VAPID key written by the binary's own `vapid-keygen`: (its PEM file, the public key it printed)."""
    vapid = directory / "vapid.pem"
    keygen = subprocess.run([Server.binary.fget(None), "vapid-keygen", str(vapid)], capture_output=True, text=True)
    assert keygen.returncode == 0, keygen.stderr
    return vapid, keygen.stdout.strip()


class Environment:
    """Starts mock + server pairs in one directory and stops every process it started."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.cert, self.key = write_self_signed(directory)
        self.p8, self.pub = write_apns_key(directory)
        self.processes = []

    def mock(self):
        mock = Mock(self.directory, self.pub)
        self.processes.append(mock)
        return mock

    def server(self, mock, overrides=None, instance_overrides=None, name="server", environ=None):
        directory = self.directory / name
        directory.mkdir(exist_ok=True)
        server = Server(directory, mock, self.p8, self.cert, self.key, overrides, instance_overrides, environ=environ)
        self.processes.append(server)
        return server

    def close(self):
        """Stops every process started here. - Raises: AssertionError, after stopping them all, when a server died
        of a crash signal at any point (a test that only checked its answers would pass over it), with its log."""
        for process in reversed(self.processes):
            try:
                process.stop()
            except Exception:  # noqa: BLE001  (clean-up must reach every process)
                process.proc.kill()
        crashes = [(server, proc) for server in self.processes if isinstance(server, Server)
                   for proc in server.crashes]
        if crashes:
            server, proc = crashes[0]
            raise AssertionError(f"push-server ({server.log_path}) died of {signal.Signals(-proc.returncode).name}"
                                 f" ({len(crashes)} crash(es) in all):\n{server.log_tail()}")
