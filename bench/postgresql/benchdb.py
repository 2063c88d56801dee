"""What the PostgreSQL benchmarks share: a throwaway PostgreSQL 15 cluster with benchmark settings, the release
server started on a config the scripts write, the nginx sink, `/proc` readings, and the bulk loader (COPY into the
schema the server's own migrations create).

The cluster is Tests/Support/postgresql_cluster.py's (initdb as `postgres` through `runuser` when run as root, a
free loopback port, the directory removed at exit) with durable settings: `fsync` on (the tests' cluster runs
without it), `shared_buffers` 256 MB, `max_wal_size` 4 GB, `maintenance_work_mem` 1 GB for the index builds after
a load. Every process a script starts is stopped at exit, also on SIGINT/SIGTERM (both raise SystemExit here).
"""
import atexit
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import postgresql_cluster  # noqa: E402

INSTANCE = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
SECRET = "bench-secret-0123456789abcdef0123456789"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAYLOAD = {"aps": {"alert": {"title": "Benchmark", "body": "A notification body of a typical size."},
                   "sound": "default"}}


def _exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _exit_on_signal)
signal.signal(signal.SIGINT, _exit_on_signal)


def log(line=""):
    print(line, flush=True)


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine():
    """One line for every result block: the machine is shared, its load says how far to trust a number."""
    return f"{os.cpu_count()} cores, load average {load_average()} (1/5/15 min)"


# MARK: /proc

def cpu_seconds(pid):
    """utime + stime of one process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_kib(pid):
    """VmRSS and VmHWM (peak RSS) of a process, KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
    hwm = int(re.search(r"^VmHWM:\s+(\d+)", status, re.M).group(1))
    return rss, hwm


def postgres_cpu_seconds(cluster):
    """utime + stime of the cluster's processes (postmaster, backends, checkpointer, walwriter, autovacuum): the
    database's side of the work, which SQLite does inside the server process. Only this cluster's: other
    clusters may run on the machine."""
    postmaster = int(Path(cluster.data, "postmaster.pid").read_text().split()[0])
    total = cpu_seconds(postmaster)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int(re.search(r"^PPid:\s+(\d+)", (entry / "status").read_text(), re.M).group(1)) == postmaster:
                total += cpu_seconds(entry.name)
        except (FileNotFoundError, ProcessLookupError, AttributeError):
            continue
    return total


# MARK: The cluster

class BenchCluster(postgresql_cluster.Cluster):
    """The test cluster with durable benchmark settings (never fsync=off for a benchmark)."""

    def __init__(self, shared_buffers="256MB"):
        self.shared_buffers = shared_buffers
        super().__init__()
        atexit.register(self.stop)

    def start_server(self):
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                   f"-c shared_buffers={self.shared_buffers} -c max_wal_size=4GB -c maintenance_work_mem=1GB")
        self._server_tool("pg_ctl", "-D", self.data, "-l", os.path.join(self.directory, "log"), "-w", "-t", "120",
                          "-o", options, "start")

    def psql(self, database, *arguments, **kwargs):
        """psql on `database` (quiet, unaligned, stop on the first error) with extra arguments."""
        command = [os.path.join(postgresql_cluster.BIN, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                   "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, *arguments]
        return subprocess.run(command, check=True, text=True, **kwargs)

    def rows(self, database, statement):
        """The rows of one statement, each a list of its `|`-separated columns."""
        out = self.psql(database, "-c", statement, capture_output=True).stdout
        return [line.split("|") for line in out.splitlines() if line]

    def value(self, database, statement):
        return self.rows(database, statement)[0][0]


# MARK: The server

def free_port():
    """A loopback port nothing listens on now (fixed ports collide with the other sessions on the machine)."""
    return postgresql_cluster._free_port()


class Sink:
    """bench/apns/nginx-sink.sh on a free port; `access_log` (a path) logs `<uri> <status>` per request, so the
    kill -9 benchmark can count what every token received."""

    def __init__(self, directory, delay_ms=0, access_log=None, workers=1):
        self.directory, self.port = Path(directory), free_port()
        environment = {**os.environ, "SINK_DIR": str(self.directory), "WORKERS": str(workers)}
        if access_log:
            environment["ACCESS_LOG"] = str(access_log)
        self.environment = environment
        started = subprocess.run([str(ROOT / "bench/apns/nginx-sink.sh"), "start", str(self.port), str(delay_ms)],
                                 capture_output=True, text=True, env=environment)
        if started.returncode != 0:
            raise RuntimeError(f"nginx-sink.sh start {self.port}: {started.stderr.strip()}")
        self.ca = started.stdout.strip().splitlines()[-1]
        atexit.register(self.stop)

    def stop(self):
        subprocess.run([str(ROOT / "bench/apns/nginx-sink.sh"), "stop", str(self.port)], env=self.environment,
                       capture_output=True)


def server_binary():
    return os.environ.get("SERVER_BIN", str(ROOT / ".build/release/push-server"))


def storage_postgresql(cluster, database, pool_size=4):
    return {"backend": "postgresql",
            "postgresql": {"connectionString": cluster.connection_string(database), "poolSize": pool_size}}


class Node:
    """One release push-server process on a written config and a free port, the instance's APNs endpoint being
    the sink."""

    def __init__(self, directory, storage, sink, engine=None, apns=None, log_level="notice", server_apns=None,
                 limits=None):
        """`apns`: keys of the instance's `apns` object; `server_apns`: the server-wide `apns` object (the window:
        `connectionsPerPool`, `streamsPerConnection`); `limits`: more keys of `limits`."""
        self.directory, self.port = Path(directory), free_port()
        self.directory.mkdir(parents=True, exist_ok=True)
        key = self.directory / "AuthKey.p8"
        if not key.exists():
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-out", str(key)], check=True, capture_output=True)
        config = {
            "listen": {"host": "127.0.0.1", "port": self.port}, "storage": storage, "log": {"level": log_level},
            # One client address polls status and metrics: the per-address limit is lifted, nothing else.
            "limits": {"ipRequestsPerSecond": 0, **(limits or {})},
            "instances": [{"id": INSTANCE, "secretKey": SECRET, "apns": {
                "teamId": "TEAM123456", "keyId": "KEY1234567", "keyPath": str(key), "topic": "com.example.bench",
                "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{sink.port}",
                "caFile": sink.ca, **(apns or {})}}],
        }
        if engine:
            config["engine"] = engine
        if server_apns:
            config["apns"] = server_apns
        (self.directory / "config.json").write_text(json.dumps(config))
        self.proc = None
        atexit.register(self.stop)
        self.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self, timeout=120):
        self.log = open(self.directory / "server.log", "ab")
        self.proc = subprocess.Popen([server_binary(), "serve", "--config", str(self.directory / "config.json")],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"push-server exited with {self.proc.returncode}; see {self.directory}/server.log")
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"push-server did not answer /health within {timeout} s")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        """SIGTERM (the server drains) and wait; nothing when it already exited."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def _request(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url(path), data=data, method=method, headers={
            "Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"{}")

    def publish(self, interest):
        return self._request("POST", f"/publish_api/v1/instances/{INSTANCE}/publishes/interests",
                             {"interests": [interest], "apns": PAYLOAD})["publishId"]

    def status(self, publish_id):
        return self._request("GET", f"/publish_api/v1/instances/{INSTANCE}/publishes/{publish_id}")

    def cancel(self, publish_id):
        return self._request("DELETE", f"/publish_api/v1/instances/{INSTANCE}/publishes/{publish_id}")

    def answers(self):
        """APNs answers this process has had since it started (its /metrics `push_notifications_total`)."""
        with urllib.request.urlopen(self.url("/metrics"), timeout=10) as response:
            text = response.read().decode()
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                   if line.startswith("push_notifications_total{"))


def wait_finished(node, publish_id, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = node.status(publish_id)
        if status["status"] not in ("queued", "running", "cancelling"):
            return status
        time.sleep(interval)
    raise RuntimeError(f"publish {publish_id} not finished after {timeout} s")


def migrate(cluster, database, directory, sink):
    """The schema is what the server's migrator creates: start a node on the empty database once, then stop it."""
    Node(Path(directory) / "migrate", storage_postgresql(cluster, database), sink).stop()


# MARK: Bulk load

def _copy(cluster, database, statement, chunks):
    """Streams text-format COPY rows (an iterable of str chunks) into `statement` (`COPY … FROM STDIN`) through
    one psql session; triggers, foreign-key checks included, are off for it (session_replication_role)."""
    command = [os.path.join(postgresql_cluster.BIN, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
               "-p", str(cluster.port), "-U", "postgres", "-d", database,
               "-c", "SET session_replication_role = replica", "-c", statement]
    with subprocess.Popen(command, stdin=subprocess.PIPE, text=True) as psql:
        try:
            for chunk in chunks:
                psql.stdin.write(chunk)
        finally:
            psql.stdin.close()
    if psql.returncode != 0:
        raise RuntimeError(f"COPY failed ({psql.returncode}): {statement}")


def _secondary_indexes(cluster, database, tables):
    """(drop, create) statements for every index of `tables` but `devices_pkey` (ids arrive in order, so its
    right-edge appends cost nothing): unique and primary-key constraints as constraints, other indexes as indexes,
    each recreated from the definition the migrations gave it."""
    names = ",".join(f"'{table}'::regclass" for table in tables)
    constraints = cluster.rows(database, f"""
        SELECT conrelid::regclass, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid IN ({names}) AND contype IN ('p', 'u') AND conname <> 'devices_pkey'""")
    indexes = cluster.rows(database, f"""
        SELECT indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index
        WHERE indrelid IN ({names}) AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = indexrelid)""")
    drop = [f"ALTER TABLE {table} DROP CONSTRAINT {name}" for table, name, _ in constraints]
    drop += [f"DROP INDEX {name}" for name, _ in indexes]
    create = [f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}" for table, name, definition in constraints]
    create += [definition for _, definition in indexes]
    return drop, create


def bulk_load(cluster, database, devices, interest="bench", subscribers=None, topics=0, users_every=5,
              tokens_file=None, chunk=20_000):
    """Loads `devices` APNs devices of INSTANCE into a migrated database with COPY; every
    (devices // subscribers)th device follows `interest`; with `topics`, device i also follows `topic-<i % topics>`;
    every `users_every`th device belongs to a user (two devices per user). Rows look like the server's own
    registrations (public ids `apns-<UUIDv7>`, 64-hex random tokens, sandbox, declared environment, bundle id).
    Secondary indexes are dropped for the load and rebuilt after it, triggers are off during COPY (the
    per-instance device count is then written once), then VACUUM ANALYZE sets the visibility map that index-only
    scans need and the statistics. Returns the seconds of each step."""
    subscribers = devices // 10 if subscribers is None else subscribers
    stride = max(1, devices // max(1, subscribers))
    steps = {}
    sql = lambda statement: cluster.psql(database, "-c", statement, capture_output=True)  # noqa: E731
    drop, create = _secondary_indexes(cluster, database, ["devices", "device_interests"])
    for statement in drop:
        sql(statement)
    started = time.monotonic()
    now_ms = int(time.time() * 1000)
    tokens_out = open(tokens_file, "w") if tokens_file else None

    def device_rows():
        for base in range(0, devices, chunk):
            count = min(chunk, devices - base)
            randomness = os.urandom(41 * count).hex()
            lines = []
            for k in range(count):
                i = base + k
                r = randomness[82 * k: 82 * k + 82]
                token = r[:64]
                # UUIDv7 as Device.makeID writes it: 48 bits of milliseconds, version 7, variant 10, random bits;
                # one millisecond per 1,000 devices keeps them time-ordered like real registrations.
                ms = f"{now_ms - devices // 1000 + i // 1000:012x}"
                public_id = f"apns-{ms[:8]}-{ms[8:]}-7{r[64:67]}-a{r[67:70]}-{r[70:82]}"
                user = f"user-{i // (2 * users_every)}" if users_every and i % users_every == 0 else "\\N"
                lines.append(f"{public_id}\t{INSTANCE}\tapns\t{token}\tsandbox\tt\tcom.example.bench\t{{}}\t{user}"
                             f"\t{now_ms}\t{now_ms}\n")
                if tokens_out:
                    tokens_out.write(token + "\n")
            yield "".join(lines)

    _copy(cluster, database,
          "COPY devices (public_id, instance_id, platform, token, environment, environment_declared, bundle_id, "
          "metadata, user_id, created_at, last_registered_at) FROM STDIN", device_rows())
    if tokens_out:
        tokens_out.close()
    steps["copy devices"] = time.monotonic() - started
    first, last, count = (int(v) for v in cluster.rows(database, "SELECT min(id), max(id), count(*) FROM devices")[0])
    assert count == devices and last - first + 1 == devices, (first, last, count)
    names = [interest] + [f"topic-{n}" for n in range(topics)]
    sql("INSERT INTO interests (instance_id, name) SELECT '%s', unnest(ARRAY[%s])"
        % (INSTANCE, ",".join(f"'{name}'" for name in names)))
    ids = dict((name, int(i)) for i, name in cluster.rows(
        database, f"SELECT id, name FROM interests WHERE instance_id = '{INSTANCE}'"))
    # The user count trigger was off: the per-instance count is written once.
    sql(f"INSERT INTO instance_device_counts VALUES ('{INSTANCE}', {devices}) "
        f"ON CONFLICT (instance_id) DO UPDATE SET devices = excluded.devices")

    def link_rows():
        bench = ids[interest]
        for base in range(0, subscribers, chunk):
            yield "".join(f"{bench}\t{first + stride * n + stride - 1}\n"
                          for n in range(base, min(subscribers, base + chunk)))
        if topics:
            topic_ids = [ids[f"topic-{n}"] for n in range(topics)]
            for base in range(0, devices, chunk):
                yield "".join(f"{topic_ids[i % topics]}\t{first + i}\n" for i in range(base, min(devices, base + chunk)))

    started = time.monotonic()
    _copy(cluster, database, "COPY device_interests (interest_id, device_id) FROM STDIN", link_rows())
    steps["copy device_interests"] = time.monotonic() - started
    # The interest count triggers were off too: the per-instance counts (limits.max*PerInstance) are written once.
    subscription_count = subscribers + (devices if topics else 0)
    sql(f"UPDATE instance_device_counts SET subscriptions = {subscription_count}, interests = {len(names)} "
        f"WHERE instance_id = '{INSTANCE}'")
    started = time.monotonic()
    for statement in create:
        sql(statement)
    steps["build indexes"] = time.monotonic() - started
    started = time.monotonic()
    sql("VACUUM ANALYZE devices")
    sql("VACUUM ANALYZE device_interests")
    sql("VACUUM ANALYZE interests")
    steps["vacuum analyze"] = time.monotonic() - started
    return steps


def new_database(cluster, prefix):
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    cluster.sql(f"CREATE DATABASE {name}")
    return name
