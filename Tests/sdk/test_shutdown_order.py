"""SIGTERM stops the server's services one after another, in a fixed order, and the log says so: the HTTP
listener first (no new work), then the engine (running publishes checkpoint), the invalidation notifier, webhook
delivery, the janitor, the
store watchdog, and the ops listener last, answering `/ready` with 503 while the rest drains. A publish accepted
before the signal is delivered in full after the restart, none twice."""
import re
import signal

import requests

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, free_port

DEVICES = 100
# One connection with 10 streams and a 4 s mock: the fan-out would need 40 s, so the signal lands early in it and
# the engine's drain (waiting for the 10 answers in flight) lasts long enough to ask the ops listener meanwhile,
# even on a loaded machine (with 2 s, the drain could be over before a slow /ready answered).
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 1, 10, 4000
STOP_ORDER = ["http", "engine", "instances", "invalidations", "webhooks", "beams-bridge", "janitor", "store-watchdog",
              "certificate-expiry", "ops-http"]


def log_fields(line):
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))


def test_sigterm_stops_services_in_order_and_the_accepted_publish_is_delivered_after_restart(environment):
    mock = environment.mock()
    server = environment.server(mock, {"apns": {"connectionsPerPool": CONNECTIONS, "streamsPerConnection": STREAMS},
                                       "limits": LOAD_TEST_LIMITS, "ops": {"listen": f"127.0.0.1:{free_port()}"}},
                                name="stop-order")
    # Read once started: a port another worker took meanwhile was replaced (Server.start).
    ops = server.ops_url("")
    client = Beams(server)
    tokens = [random_token() for _ in range(DEVICES)]
    interest = unique("stop-order")
    register_devices(server, INSTANCE_ID, tokens, interest)
    assert requests.get(f"{ops}/ready", timeout=10).status_code == 200
    mock.configure(delay_ms=MOCK_DELAY_MS)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    wait_for(lambda: mock.stats()["requests"] >= STREAMS, timeout=20)

    server.proc.send_signal(signal.SIGTERM)
    # While the engine waits for the answers in flight, the ops listener still answers, and says not ready.
    # (A 503 `Response` is falsy, so its body is what `wait_for` returns.)
    draining = wait_for(lambda: (lambda r: r.json() if r.status_code == 503 else None)(requests.get(f"{ops}/ready", timeout=10)),
                        timeout=10, interval=0.02, message="/ready never answered 503 during the drain")
    assert draining["ready"] is False
    assert draining["checks"]["draining"] is True, draining
    assert draining["checks"]["store"]["ok"] is True, draining
    assert server.proc.wait(timeout=40) == 0
    seen_at_stop = mock.stats()["requests"]
    assert STREAMS <= seen_at_stop < DEVICES, seen_at_stop

    lines = server.log_path.read_text().splitlines()
    stopping = [log_fields(line) for line in lines if 'msg="Stopping services"' in line]
    assert len(stopping) == 1, stopping
    assert stopping[0]["reason"] == "requested"
    assert stopping[0]["order"] == ",".join(STOP_ORDER)
    stopped = [log_fields(line)["service"] for line in lines if 'msg="Service stopped"' in line]
    assert stopped == STOP_ORDER, stopped
    summary = [log_fields(line) for line in lines if 'msg="Services stopped"' in line]
    assert [fields["order"] for fields in summary] == [",".join(STOP_ORDER)], summary
    assert not any("did not stop within the grace period" in line for line in lines)
    # The signal came first; the listener closed before the engine drained.
    signal_at = next(i for i, line in enumerate(lines) if 'msg="Signal received, draining"' in line)
    http_at = next(i for i, line in enumerate(lines) if 'msg="Service stopped"' in line and "service=http " in line)
    engine_at = next(i for i, line in enumerate(lines) if 'msg="Service stopped"' in line and "service=engine" in line)
    assert signal_at < http_at < engine_at

    mock.configure(delay_ms=0)
    server.start()
    status = client.wait_finished(publish_id)
    assert status["status"] == "finished" and status["attempts"] == 2, status
    assert status["targets"] == DEVICES and status["apns"]["accepted"] == DEVICES, status
    per_token = mock.stats()["per_token"]
    assert all(per_token.get(token, {}).get("200", 0) == 1 for token in tokens), "every device once, none twice"
    assert requests.get(server.ops_url("/ready"), timeout=10).status_code == 200
