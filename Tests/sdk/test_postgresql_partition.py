"""A node cut off from the database mid fan-out: node A reaches PostgreSQL through a TCP proxy that the test
freezes (every byte held, no connection closed: renewals, checkpoints and page reads all hang, as on a stalled
network path). Node A cannot learn that its lease ran out; it must stop sending its publish at four fifths of the
lease after its last successful renewal, before node B may claim the publish, and node B finishes it. Nothing is
sent by A after its deadline, every device is reached, and what is sent twice is bounded by what A sent between the
freeze and its deadline (answers it can no longer record) plus its in-flight window.

Both nodes share the strict mock APNs and the test run's throwaway PostgreSQL cluster
(Tests/Support/postgresql_cluster.py)."""
import socket
import threading
import time
import uuid

import requests

from beams import Beams, wait_for
from bulk import register_devices
from crash import CHECKPOINT_INTERVAL_S, LEASE_SECONDS
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, postgresql_cluster_or_skip_module

postgresql_cluster = postgresql_cluster_or_skip_module()

DEVICES = 3000
# 2 x 50 streams answered after 500 ms: 200 notifications/s, so the fan-out takes 15 s, far longer than the lease.
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 2, 50, 500
RATE = CONNECTIONS * STREAMS / (MOCK_DELAY_MS / 1000)
# The run's deadline after its last successful renewal (`LeaseClock`: the lease minus a fifth).
FENCE_SECONDS = LEASE_SECONDS * 4 / 5


class FreezableProxy:
    """A TCP proxy on 127.0.0.1 to `port`: while frozen it forwards nothing in either direction and leaves every
    connection open, so the peer's kernel still acknowledges what the node sends and nothing times out."""

    def __init__(self, port):
        self.target = port
        self.running = threading.Event()
        self.running.set()
        self.closed = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self):
        self.running.clear()

    def thaw(self):
        self.running.set()

    def close(self):
        self.closed = True
        self.running.set()
        for sock in [self.listener, *self.sockets]:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.running.wait()
            server = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()

    def _pump(self, source, destination):
        try:
            while True:
                data = source.recv(65536)
                self.running.wait()
                if not data:
                    destination.shutdown(socket.SHUT_WR)
                    return
                destination.sendall(data)
        except OSError:
            return


def accepted_by(server):
    """APNs notifications this node got a 200 for, from its /metrics (its HTTP side needs no database)."""
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("push_notifications_total{") and 'status="200"' in line)


def test_a_node_cut_off_from_the_database_stops_sending_before_its_lease_ends(environment):
    cluster = postgresql_cluster.shared()
    database = cluster.create_database("partition")
    proxy = FreezableProxy(cluster.port)
    mock = environment.mock()

    def overrides(port):
        connection = cluster.connection_string(database).replace(f"port={cluster.port}", f"port={port}")
        return {"storage": {"backend": "postgresql", "postgresql": {"connectionString": connection}},
                "engine": {"leaseSeconds": LEASE_SECONDS},
                "apns": {"connectionsPerPool": CONNECTIONS, "streamsPerConnection": STREAMS},
                "limits": LOAD_TEST_LIMITS}

    node_a = environment.server(mock, overrides(proxy.port), name="partition-a")
    node_b = environment.server(mock, overrides(cluster.port), name="partition-b")
    interest = f"partition-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(DEVICES)]
    # Registered through node B, which reaches the database directly: through node A, every registration's
    # transaction crossed the Python proxy, and the 3,000 took two minutes on a loaded machine.
    register_devices(node_b, INSTANCE_ID, tokens, interest, concurrency=64)
    # Node B is down while the publish starts, so node A claims it.
    node_b.stop()
    try:
        mock.configure(record=False, delay_ms=MOCK_DELAY_MS)
        control = requests.Session()
        seen = lambda: control.get(f"{mock.control}/stats", params={"tokens": "0"}, timeout=30).json()["requests"]  # noqa: E731
        before = seen()
        publish_id = Beams(node_a).publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "cut"}}})
        # Running for more than a renewal period (a third of the lease): node A renewed at least once.
        wait_for(lambda: seen() - before >= RATE * LEASE_SECONDS / 2, timeout=60, interval=0.01,
                 message="the fan-out never got going")
        proxy.freeze()
        frozen_at = time.monotonic()
        node_b.start()
        # A's last successful renewal was sent before the freeze: its deadline is at most FENCE_SECONDS later.
        # Past it, only answers to requests sent before it can still arrive (after the mock's delay, plus slack).
        time.sleep(max(0.0, frozen_at + FENCE_SECONDS + MOCK_DELAY_MS / 1000 + 1.5 - time.monotonic()))
        by_a_at_deadline = accepted_by(node_a)
        assert by_a_at_deadline < DEVICES, "node A delivered the whole publish"

        status = Beams(node_b).wait_finished(publish_id, timeout=120)
        assert status["status"] == "finished", status
        assert accepted_by(node_a) == by_a_at_deadline, "node A sent after its lease deadline"
        per_token = requests.get(f"{mock.control}/stats", timeout=30).json()["per_token"]
        counts = [per_token.get(token, {}).get("200", 0) for token in tokens]
        assert counts.count(0) == 0, f"{counts.count(0)} devices never reached"
        duplicates = sum(c - 1 for c in counts if c > 1)
        # Sent twice: what A sent from its last checkpoint before the freeze until its deadline (answers it could
        # not record), its window at most beyond that.
        assert duplicates <= RATE * (FENCE_SECONDS + 2 * CHECKPOINT_INTERVAL_S) + CONNECTIONS * STREAMS, duplicates
    finally:
        # Node A's hung calls go on (and its stale checkpoint is refused: node B owns the publish).
        proxy.thaw()
        node_a.stop()
        proxy.close()
        node_b.stop()
    assert "Publish lease not renewed in time" in node_a.log_path.read_text()
