"""A throwaway PostgreSQL 15 cluster for the end-to-end tests (the Python twin of TestSupport's PostgreSQLCluster).

`initdb` into a temporary directory, `pg_ctl start` on a free loopback port with trust authentication, one database
per caller (`create_database`), `pg_ctl -m immediate stop` and the directory removed at interpreter exit. The server
refuses to run as root, so as root (CI) the directory belongs to `postgres` and the server tools run through
`runuser -u postgres`. Binaries: `PUSH_TEST_PG_BIN`, default `/usr/lib/postgresql/15/bin` (Debian's postgresql-15).
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import uuid

BIN = os.environ.get("PUSH_TEST_PG_BIN", "/usr/lib/postgresql/15/bin")


def installed():
    return os.access(os.path.join(BIN, "initdb"), os.X_OK) and os.access(os.path.join(BIN, "pg_ctl"), os.X_OK)


from free_port import free_port as _free_port, start_on_free_ports  # noqa: E402  (Tests/Support is on the path)


class Cluster:
    def __init__(self):
        if not installed():
            raise RuntimeError(f"PostgreSQL is not installed at {BIN} (apt-get install postgresql, or set PUSH_TEST_PG_BIN)")
        self.directory = tempfile.mkdtemp(prefix="push-pg-")
        self.data = os.path.join(self.directory, "data")
        self.port = _free_port()
        if os.getuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        try:
            self._server_tool("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
                              "--no-sync")
            # A port another worker took since it was picked is replaced (the first start only: a restart keeps
            # the port the servers' connection strings name).
            start_on_free_ports(self._start_on, os.path.join(self.directory, "log"), [self.port])
        except Exception:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self._stopped = False

    def _server_tool(self, tool, *arguments):
        command = [os.path.join(BIN, tool), *arguments]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        # close_fds (the default) keeps the test's pipes out of the server that pg_ctl leaves running.
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)

    def _start_on(self, port):
        self.port = port
        self.start_server()

    def start_server(self):
        # fsync off: a test cluster trades durability against power loss for speed (never for benchmarks); commits
        # still reach the WAL before they are acknowledged, so a server crash loses none.
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
        self._server_tool("pg_ctl", "-D", self.data, "-l", os.path.join(self.directory, "log"), "-w", "-t", "60",
                          "-o", options, "start")

    def stop_server(self):
        self._server_tool("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        try:
            self.stop_server()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.directory, ignore_errors=True)

    def sql(self, statement, database="postgres"):
        result = subprocess.run(
            [os.path.join(BIN, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", "postgres", "-d", database, "-c", statement],
            check=True, capture_output=True, text=True)
        return result.stdout.strip()

    def connection_string(self, database):
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database} sslmode=disable"

    def create_database(self, prefix="e2e"):
        name = f"{prefix}_{uuid.uuid4().hex}"
        self.sql(f"CREATE DATABASE {name}")
        return name


_shared = None


def shared():
    """The interpreter's one cluster, started on first use and stopped at exit."""
    global _shared
    if _shared is None:
        _shared = Cluster()
        atexit.register(_shared.stop)
    return _shared


def storage_section(prefix="e2e", **postgresql):
    """A server's `storage` section on a new database (named after `prefix`) of the shared cluster; `postgresql`:
    more `storage.postgresql` settings (`shardSize`, pool sizes)."""
    cluster = shared()
    return {"backend": "postgresql",
            "postgresql": {"connectionString": cluster.connection_string(cluster.create_database(prefix)), **postgresql}}
