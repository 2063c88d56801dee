"""Crash-durability trial: stop the server in the middle of a fan-out, restart it on the same SQLite file, and
count per token at the mock what every device received.

Used by tests/test_publish_durability.py (2,000 devices) and bench/reliability/kill9.py (100,000 devices).
"""
import contextlib
import json
import re
import signal as signals
import sqlite3
import time
import uuid

import requests

from beams import Beams, wait_for
from bulk import register_devices
from harness import INSTANCE_ID, LOAD_TEST_LIMITS

# The engine claims a crashed node's publish once its lease has expired; the shortest lease the config allows
# keeps the trial short (the default, 30 s, is for production).
LEASE_SECONDS = 5
# What can be in flight at once by default: apns.connectionsPerPool (4) × apns.streamsPerConnection (250).
DEFAULT_CONNECTIONS, DEFAULT_STREAMS = 4, 250
# PublishEngine.Settings.checkpointInterval: results newer than the last checkpoint are re-sent after a crash too.
CHECKPOINT_INTERVAL_S = 0.2
# How many checkpoint intervals of answers the store may lack at a kill beyond the in-flight window: one being
# gathered, one being written, and two for the writer's queue when the machine is crowded (CI runs three test tiers
# on two cores; with two, a run on `fa0dcf2` lacked 199 against a bound of 193). Exactly once does not rest on it:
# that is the check against what the store held (`assert_resent_only_what_the_store_lacked`).
CHECKPOINT_LAG_INTERVALS = 4


def metric(text, name):
    """The value of an unlabelled metric in a /metrics page (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def fanout_rate(samples, started, sent_at, at_stop):
    """Answers per second at the stop: the greater of the whole fan-out's average and the rate over the last two
    checkpoint intervals before it (from the server's own counts polled while waiting). What a crash re-sends was
    answered since the last checkpoint, at the rate of that moment; the average since the publish includes the
    start (the first page, the TLS handshakes), which on a loaded machine can be most of it."""
    average = at_stop / max(sent_at - started, 1e-3)
    since = sent_at - 2 * CHECKPOINT_INTERVAL_S
    earlier = [(t, n) for t, n in samples if t <= since]
    if not earlier:
        return average
    t, n = earlier[-1]
    return max(average, (at_stop - n) / max(sent_at - t, 1e-3))


def assert_resent_only_what_the_store_lacked(result):
    """No device whose answer a checkpoint had stored was sent again: the re-sent ones are at most the requests the
    mock had seen less the answers the store held at the kill (read from the store itself, so this holds however the
    machine was loaded). Then the checkpoints' pace: what the store lacked is at most what was in flight plus the
    answers of `CHECKPOINT_LAG_INTERVALS` checkpoint intervals at the rate the fan-out ran, so a checkpoint loop
    that stalled fails here."""
    lacking = result["seen_at_stop"] - result["durable_at_stop"]
    assert result["duplicates"] <= lacking, result
    bound = result["in_flight_window"] + result["fanout_rate"] * CHECKPOINT_LAG_INTERVALS * CHECKPOINT_INTERVAL_S
    assert lacking <= bound, (lacking, bound)


def durable_accepted(server, publish_id):
    """The APNs answers of `publish_id` that its checkpoints had made durable: its `apns.accepted` counter as the
    store holds it, read while no server runs (after a kill, before the restart). A checkpoint writes its counters in
    the one transaction with its cursor and answered refs, so this is what a resumed run skips."""
    assert re.fullmatch(r"[A-Za-z0-9_-]+", publish_id), publish_id
    sql = ("SELECT coalesce(sum(c.value), 0) FROM publish_counters c JOIN publish_jobs j ON j.id = c.job_id "
           f"WHERE j.publish_id = '{publish_id}' AND c.name = 'apns.accepted'")
    storage = json.loads(server.config_path.read_text())["storage"]
    if storage.get("backend") == "postgresql":
        import postgresql_cluster
        database = re.search(r"dbname=(\S+)", storage["postgresql"]["connectionString"]).group(1)
        return int(postgresql_cluster.shared().sql(sql, database=database) or 0)
    with contextlib.closing(sqlite3.connect(storage["path"])) as database:
        return int(database.execute(sql).fetchone()[0])


def crash_trial(environment, devices, stop_signal=signals.SIGKILL, stop_fraction=0.4, log=print,
                concurrency=32, name=None, connections=DEFAULT_CONNECTIONS, streams=DEFAULT_STREAMS,
                mock_delay_ms=0, token_floor_scope="key", lease_seconds=LEASE_SECONDS):
    """Runs one trial and returns its numbers; raises AssertionError when the trial could not be run as planned.

    Method: register `devices` devices on one interest through the device API; switch request recording off at
    the mock (per-token counters stay) and make it enforce the 20-minute provider-token refresh floor per key
    (`token_floor_scope`, as APNs does: a restarted server that signed a new token would get 429
    TooManyProviderTokenUpdates); publish; when the server has `stop_fraction` of its APNs answers (its
    /metrics), send `stop_signal` to it; restart it on the same SQLite file; time from its /health answering to its
    first APNs answer (`resume_seconds`); wait for the publish to finish; compare the mock's per-token counts with
    the registered tokens.
    """
    name = name or f"crash-{uuid.uuid4().hex[:6]}"
    window = connections * streams
    mock = environment.mock()
    # A load test: bulk registration from one address, as fast as the server takes it, so the per-address and
    # per-instance device API limits are lifted explicitly.
    # A stable node identity, kept across the restart: on PostgreSQL it is what lets the restarted process take its
    # own dead lease over at once (on SQLite the database's lock file does that; the identity changes nothing).
    node_id = f"crash-node-{uuid.uuid4().hex[:12]}"
    server = environment.server(mock, {"engine": {"leaseSeconds": lease_seconds, "nodeId": node_id},
                                       "apns": {"connectionsPerPool": connections, "streamsPerConnection": streams},
                                       "limits": LOAD_TEST_LIMITS},
                                name=name)
    client = Beams(server)
    interest = f"crash-{uuid.uuid4().hex[:8]}"
    tokens = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(devices)]
    _, seconds = register_devices(server, INSTANCE_ID, tokens, interest, concurrency=concurrency)
    log(f"registered {devices} devices on one interest in {seconds:.1f} s "
        f"({2 * devices / seconds:.0f} device-API requests/s over {concurrency} keep-alive TLS connections)")
    subscribers = client.session.get(server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/interests/{interest}"),
                                     headers={"Authorization": f"Bearer {client.secret}"}, timeout=10).json()
    assert subscribers["subscribers"] == devices, subscribers

    # Recording every request would cost the mock more than answering it; per-token counters stay on.
    mock.configure(record=False, delay_ms=mock_delay_ms, token_floor_scope=token_floor_scope)
    publish_id = client.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "crash test"}}})
    started = time.monotonic()
    threshold = int(devices * stop_fraction)
    control = requests.Session()

    samples = [(started, 0)]

    def answered():
        # The server's own count of APNs answers (/metrics): under full load the mock's single-threaded control
        # API can lag by seconds, the server's multi-threaded listener does not.
        text = client.session.get(server.url("/metrics"), timeout=10).text
        count = sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                    if line.startswith("push_notifications_total{"))
        samples.append((time.monotonic(), count))
        return count

    at_stop = wait_for(lambda: (lambda n: n if n >= threshold else None)(answered()), timeout=300, interval=0.005,
                       message="the fan-out never reached the stop point")
    sent_at = time.monotonic()
    server.proc.send_signal(stop_signal)
    exit_code = server.proc.wait(timeout=60)
    stop_seconds = time.monotonic() - sent_at
    seen_by_mock = control.get(f"{mock.control}/stats", params={"tokens": "0"}, timeout=60).json()["requests"]
    durable = durable_accepted(server, publish_id)
    log(f"{signals.Signals(stop_signal).name} after {sent_at - started:.2f} s of fan-out, when the server had "
        f"{at_stop} of {devices} answers ({100 * at_stop / devices:.0f}%); it exited with {exit_code} after "
        f"{stop_seconds:.2f} s; the mock had seen {seen_by_mock} requests ({100 * seen_by_mock / devices:.0f}%), "
        f"the store held {durable} of their answers")

    restarted = time.monotonic()
    server.start()
    healthy = time.monotonic()
    wait_for(lambda: answered() > 0, timeout=300, interval=0.01, message="the restarted server never sent")
    resume_seconds = time.monotonic() - healthy
    log(f"the restarted server answered /health {healthy - restarted:.2f} s after its start and had its first APNs "
        f"answer {resume_seconds:.2f} s later (lease {lease_seconds} s)")
    status = client.wait_finished(publish_id, timeout=300)
    log(f"restarted on the same SQLite file; the publish finished {time.monotonic() - restarted:.1f} s later "
        f"(attempt {status['attempts']})")
    metrics = client.session.get(server.url("/metrics"), timeout=10).text
    tokens_after_restart = {"signed": metric(metrics, "push_apns_token_refreshes"),
                            "adopted": metric(metrics, "push_apns_tokens_adopted"),
                            "update_rejections": metric(metrics, "push_apns_token_update_rejections")}
    log(f"provider tokens after the restart: {tokens_after_restart}")

    per_token = control.get(f"{mock.control}/stats", timeout=60).json()["per_token"]
    accepted = {token: counts.get("200", 0) for token, counts in per_token.items()}
    missing = sum(1 for token in tokens if accepted.get(token, 0) == 0)
    duplicates = sum(max(0, accepted.get(token, 0) - 1) for token in tokens)
    registered = set(tokens)
    strangers = sum(1 for token in per_token if token not in registered)
    non_200 = sum(sum(v for k, v in counts.items() if k != "200") for counts in per_token.values())
    result = {
        "devices": devices, "signal": signals.Signals(stop_signal).name, "exit_code": exit_code,
        "stop_seconds": stop_seconds, "seen_at_stop": seen_by_mock, "answered_at_stop": at_stop, "durable_at_stop": durable, "missing": missing, "duplicates": duplicates,
        "unknown_tokens": strangers, "non_200": non_200, "status": status, "in_flight_window": window,
        "fanout_rate": fanout_rate(samples, started, sent_at, at_stop), "tokens_after_restart": tokens_after_restart,
        "resume_seconds": resume_seconds,
        "by_reason": control.get(f"{mock.control}/stats", params={"tokens": "0"}, timeout=60).json()["by_reason"],
    }
    log(f"result: missing={missing} duplicates={duplicates} (in-flight window {window}: {connections} connections "
        f"x {streams} streams; mock delay {mock_delay_ms} ms) "
        f"non-200={non_200} unknown-tokens={strangers}")
    log(f"publish status: targets={status['targets']} accepted={status['apns']['accepted']} "
        f"failed={status['apns']['failed']} attempts={status['attempts']}")
    server.stop()
    mock.stop()
    return result
