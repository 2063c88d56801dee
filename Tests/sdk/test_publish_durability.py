"""Crash durability, fast variant (2,000 devices; bench/reliability/kill9.sh runs 100,000): stop the server in the
middle of a fan-out, restart it on the same SQLite file, and check per token at the mock that every device got the
notification and the publish's counts are exact."""
import signal
import time

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from crash import assert_resent_only_what_the_store_lacked, crash_trial
from harness import INSTANCE_ID, LOAD_TEST_LIMITS

DEVICES = 2000
# A small window and a slow mock stretch the fan-out over about two seconds, so the stop lands in its middle.
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 2, 50, 100


def trial(environment, stop_signal, **options):
    return crash_trial(environment, DEVICES, stop_signal, stop_fraction=0.4, connections=CONNECTIONS,
                       streams=STREAMS, mock_delay_ms=MOCK_DELAY_MS,
                       name=options.pop("name", signal.Signals(stop_signal).name), **options)


def assert_exact_counts(result):
    status = result["status"]
    assert status["status"] == "finished"
    assert status["attempts"] == 2, status
    assert status["targets"] == DEVICES, status
    assert status["apns"]["accepted"] == DEVICES, status
    assert status["apns"]["failed"] == 0, status


def assert_resumed_after_kill(result):
    """After a kill -9 mid fan-out and a restart: every device got the notification, every request went to a known
    token and was answered 200, only what the store lacked was sent again (`assert_resent_only_what_the_store_lacked`),
    and the counts are exact."""
    assert result["missing"] == 0, result
    assert result["unknown_tokens"] == 0 and result["non_200"] == 0, result
    assert_resent_only_what_the_store_lacked(result)
    assert_exact_counts(result)


def test_kill_9_mid_fanout_loses_no_device_and_bounds_duplicates(environment):
    result = trial(environment, signal.SIGKILL)
    assert 0 < result["seen_at_stop"] < DEVICES, result
    assert_resumed_after_kill(result)


def test_kill_9_restart_resumes_at_once_not_after_the_dead_process_lease(environment):
    """The only process on the SQLite file holds its lock (`<db>.lock`), so the restarted one knows the lease of
    the publish it finds running is a dead process's and takes it over at once; before, it waited out the lease
    (the default 30 s here)."""
    result = trial(environment, signal.SIGKILL, lease_seconds=30, name="KILL-default-lease")
    assert 0 < result["seen_at_stop"] < DEVICES, result
    # Generous for a loaded machine; the dead process's lease had more than 25 s to run.
    assert result["resume_seconds"] < 5, result
    assert_resumed_after_kill(result)


def test_sigterm_mid_fanout_exits_0_within_the_drain_bound_and_resumes_without_duplicates(environment):
    result = trial(environment, signal.SIGTERM)
    assert 0 < result["seen_at_stop"] < DEVICES, result
    assert result["exit_code"] == 0, result
    # ServeCommand.gracePeriod is 20 s; the in-flight answers come back in well under a second here.
    assert result["stop_seconds"] < 20, result
    assert result["missing"] == 0, result
    # A drained stop checkpoints every answered notification: nothing is sent twice.
    assert result["duplicates"] == 0, result
    assert_exact_counts(result)


def test_sigterm_with_unanswered_requests_exits_at_the_grace_bound_and_resends_them(environment):
    """APNs never answers within the drain: the server gives up after its grace period (20 s: half waiting for
    answers, half for the client to drain), exits 0, and the restarted server sends the unanswered ones again."""
    mock = environment.mock()
    server = environment.server(mock, {"apns": {"connectionsPerPool": 2, "streamsPerConnection": 50},
                                       "limits": LOAD_TEST_LIMITS}, name="unanswered")
    client = Beams(server)
    tokens = [random_token() for _ in range(300)]
    interest = unique("drain")
    register_devices(server, INSTANCE_ID, tokens, interest)
    # Warm both connections first: the client sends one stream on a cold connection until APNs answers it.
    warm = unique("warm")
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(20)], warm)
    client.wait_finished(client.publish("interests", {"interests": [warm], "apns": alert()}))
    mock.reset()
    mock.configure(delay_ms=120_000)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert()})
    wait_for(lambda: mock.stats()["requests"] >= 100, timeout=20)
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=40) == 0, server.log_tail()
    assert time.monotonic() - started < 25
    unanswered = mock.stats()["requests"]
    assert unanswered == 100, unanswered  # the window: nothing more was sent while stopping
    mock.configure(delay_ms=0)
    server.start()
    status = client.wait_finished(publish_id)
    assert status["targets"] == 300 and status["apns"]["accepted"] == 300 and status["attempts"] == 2, status
    per_token = mock.stats()["per_token"]
    assert all(per_token.get(token, {}).get("200", 0) >= 1 for token in tokens)
    # Only the unanswered requests went out twice.
    assert sum(per_token[token]["200"] - 1 for token in tokens) <= unanswered


def test_small_publish_is_not_held_back_by_a_large_one(environment):
    mock = environment.mock()
    server = environment.server(mock, {"apns": {"connectionsPerPool": 2, "streamsPerConnection": 50},
                                       "limits": LOAD_TEST_LIMITS}, name="fairness")
    client = Beams(server)
    big = unique("big")
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(2000)], big)
    small_token, small = random_token(), unique("small")
    client.register(small_token, [small])
    mock.configure(delay_ms=100)  # 100 in flight, 100 ms each: the large publish needs at least 2 s
    big_id = client.publish("interests", {"interests": [big], "apns": alert()})
    wait_for(lambda: mock.stats()["requests"] >= 200, timeout=20)
    small_id = client.publish("interests", {"interests": [small], "apns": alert()})
    client.wait_finished(small_id, timeout=10)
    assert client.status(big_id)["status"] == "running"
    assert client.wait_finished(big_id)["apns"]["accepted"] == 2000
