"""Crash durability, fast variant (2,000 devices; bench/reliability/kill9.sh runs 100,000): stop the server in the
middle of a fan-out, restart it on the same SQLite file, and check per token at the mock that every device got the
notification and the publish's counts are exact."""
import signal

from crash import CHECKPOINT_INTERVAL_S, crash_trial

DEVICES = 2000
# A small window and a slow mock stretch the fan-out over about two seconds, so the stop lands in its middle.
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 2, 50, 100


def trial(environment, stop_signal):
    return crash_trial(environment, DEVICES, stop_signal, stop_fraction=0.4, connections=CONNECTIONS,
                       streams=STREAMS, mock_delay_ms=MOCK_DELAY_MS, name=signal.Signals(stop_signal).name)


def assert_exact_counts(result):
    status = result["status"]
    assert status["status"] == "finished"
    assert status["attempts"] == 2, status
    assert status["targets"] == DEVICES, status
    assert status["apns"]["accepted"] == DEVICES, status
    assert status["apns"]["failed"] == 0, status


def test_kill_9_mid_fanout_loses_no_device_and_bounds_duplicates(environment):
    result = trial(environment, signal.SIGKILL)
    assert 0 < result["seen_at_stop"] < DEVICES, result
    assert result["missing"] == 0, result
    assert result["unknown_tokens"] == 0 and result["non_200"] == 0, result
    # Re-sent after the restart: what was in flight, plus what was answered since the last checkpoint (one
    # interval, doubled for the checkpoint write itself) at the rate the fan-out ran.
    bound = result["in_flight_window"] + result["fanout_rate"] * 2 * CHECKPOINT_INTERVAL_S
    assert result["duplicates"] <= bound, (result["duplicates"], bound)
    assert_exact_counts(result)


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
