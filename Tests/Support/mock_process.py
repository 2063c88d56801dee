"""A mock (`mock_apns.py`, `mock_fcm.py`, `mock_push_service.py`) as a child process, for the mocks' own tests.

Starts the script, reads its start-up line (`mock_server.announce_and_wait`) and talks to its control API; the
autouse `_reset` fixture resets a module's `mock` fixture before each test that uses it (test modules import it,
see `mock_apns_testkit.py` for why there is no conftest.py here)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from typing import Any

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


class MockProcess:
    """A running mock script and its control API; `info` is its start-up line."""

    def __init__(self, script: str, args: list[str]) -> None:
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, script), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.info: dict[str, Any] = json.loads(self.proc.stdout.readline())
        self.port: int = self.info["port"]
        self.control_port: int = self.info["control_port"]
        self.ca_file: str = self.info["ca_file"]

    def control(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        """One control API call; asserts its status is `expect` and returns the JSON answer."""
        conn = http.client.HTTPConnection("127.0.0.1", self.control_port, timeout=10)
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        payload = json.loads(resp.read())
        conn.close()
        assert resp.status == expect, payload
        return payload

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _reset(request: pytest.FixtureRequest):
    if "mock" in request.fixturenames:
        request.getfixturevalue("mock").control("POST", "/reset")
    yield
