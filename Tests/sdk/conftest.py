"""Fixtures for end-to-end tests: the real push-server binary, over TLS or plain HTTP, against the strict mock APNs.

The processes themselves are in harness.py (shared with bench/reliability/).
"""
import os

import pytest

from harness import (  # noqa: F401  (re-exported: the test modules import these from conftest)
    INSTANCE_ID, KEY_ID, MOCK, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET, ROOT, SECRET, TEAM_ID, TOPIC,
    Environment, Mock, Server, free_port, write_apns_key, write_self_signed, write_vapid_key,
)
from receiver import Receiver

def pytest_addoption(parser):
    parser.addoption("--store", choices=("sqlite", "postgresql"), default=None,
                     help="the servers' storage backend (default: PUSH_TEST_STORE, else sqlite); postgresql starts a "
                          "throwaway PostgreSQL 15 cluster (Tests/Support/postgresql_cluster.py)")


def pytest_configure(config):
    # `make test` runs these alone, after the parallel lanes: what they assert is a rate measured against the same
    # server's rate alone, which CPU taken by other tests' servers skews (docs/CONTRIBUTING.md, "Test tiers").
    config.addinivalue_line("markers", "timing: compares rates measured in the test; run without parallel neighbours")
    store = config.getoption("--store", default=None)
    if store:
        os.environ["PUSH_TEST_STORE"] = store


# make test runs these files on pytest-xdist workers with `--dist loadfile --no-loadscope-reorder`: a file's tests
# stay in one worker (its module-scoped servers, mocks and environment are never shared across processes), and the
# files are handed out in collection order. The longest go first (measured with `pytest --durations`): one started
# last would run alone at the end while the other workers idle. (xdist's own order, most tests first, started
# test_postgresql_nodes.py, 8 tests and the longest file, near the end.) Not in the list, though long enough:
# test_apns_connection_faults.py, whose drains have time bounds and use CPU, is better off after the start, when
# make test's other tiers (XCTest above all) load the two cores most.
LONGEST_FIRST = ("test_postgresql_nodes.py", "test_postgresql_shards.py", "test_publish_schedule.py",
                 "test_publish_durability.py", "test_postgresql_partition.py", "test_unifiedpush.py",
                 "test_device_api.py", "test_api_keys.py", "test_beams_bridge.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the order inside a file stays


# A second instance without APNs credentials, for the instance-isolation tests.
OTHER_INSTANCE_ID = "3d9e1c52-7a4b-4e8f-9c0d-5b6a7f8e9d01"
OTHER_SECRET = "other-instance-secret-fedcba9876543210"


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """A factory for extra mock/server pairs (fixtures with their own limits); everything stops at module end."""
    env = Environment(tmp_path_factory.mktemp("e2e"))
    yield env
    env.close()


@pytest.fixture(scope="module")
def hook():
    """A local webhook receiver (receiver.py) for the module's servers to post to; closed at module end."""
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def env(environment):
    mock = environment.mock()
    server = environment.server(mock)
    yield server, mock


@pytest.fixture(scope="module")
def plain_env(tmp_path_factory):
    """The same server over plain HTTP (what a reverse proxy in front of it talks to), with a second instance
    (`OTHER_INSTANCE_ID`, no APNs credentials) to check that instances are isolated."""
    directory = tmp_path_factory.mktemp("e2e-plain")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, extra_instances=[{"id": OTHER_INSTANCE_ID, "secretKey": OTHER_SECRET}])
    yield server, mock
    server.stop()
    mock.stop()


@pytest.fixture(scope="module")
def limited_env(tmp_path_factory):
    """Plain HTTP with small limits: 3 devices per user and 5 secret-key requests per second per instance."""
    directory = tmp_path_factory.mktemp("e2e-limited")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, limits={"maxDevicesPerUser": 3, "requestsPerSecondPerInstance": 5})
    yield server, mock
    server.stop()
    mock.stop()
