"""Fixtures for end-to-end tests: the real push-server binary, over TLS, against the strict mock APNs.

The processes themselves are in harness.py (shared with bench/reliability/).
"""
import pytest

from harness import (  # noqa: F401  (re-exported: the test modules import the constants from conftest)
    INSTANCE_ID, KEY_ID, NO_CREDENTIALS_INSTANCE_ID, NO_CREDENTIALS_SECRET, SECRET, TEAM_ID, TOPIC, Environment,
    Mock, Server,
)


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """A factory for extra mock/server pairs (fixtures with their own limits); everything stops at module end."""
    env = Environment(tmp_path_factory.mktemp("e2e"))
    yield env
    env.close()


@pytest.fixture(scope="module")
def env(environment):
    mock = environment.mock()
    server = environment.server(mock)
    yield server, mock
