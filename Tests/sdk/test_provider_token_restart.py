"""Provider tokens survive restarts (issue 10, item 7): kill -9 in the middle of a 2,000-device fan-out against a
mock that enforces APNs' 20-minute provider-token refresh floor per key (a new token for the key within 20 minutes
answers 429 TooManyProviderTokenUpdates, on any connection). The restarted server must reuse the token stored by
its predecessor, so every device gets the notification; duplicates are limited to what was in flight or answered
since the last checkpoint, and reported."""
import signal

from crash import assert_resent_only_what_the_store_lacked, crash_trial

DEVICES = 2_000
# As in test_publish_durability.py: a small window and a slow mock stretch the fan-out over about two seconds, so
# the kill lands in its middle (the property needs a restart mid fan-out, not a large one).
CONNECTIONS, STREAMS, MOCK_DELAY_MS = 2, 50, 100


def test_kill_9_mid_fanout_restarted_server_reuses_the_stored_token_and_loses_no_device(environment):
    result = crash_trial(environment, DEVICES, signal.SIGKILL, stop_fraction=0.4, connections=CONNECTIONS,
                         streams=STREAMS, mock_delay_ms=MOCK_DELAY_MS, name="token-restart")
    print(f"kill -9 with the per-key refresh floor: missing={result['missing']} duplicates={result['duplicates']} "
          f"(bound {result['in_flight_window']} in flight + checkpoint lag) tokens={result['tokens_after_restart']} "
          f"reasons={result['by_reason']}")
    assert 0 < result["seen_at_stop"] < DEVICES, result
    assert result["missing"] == 0, result
    assert "TooManyProviderTokenUpdates" not in result["by_reason"], result["by_reason"]
    assert result["non_200"] == 0 and result["unknown_tokens"] == 0, result
    # The restarted process signed nothing: it adopted the token its predecessor stored before first use.
    assert result["tokens_after_restart"] == {"signed": 0, "adopted": 1, "update_rejections": 0}, result
    assert_resent_only_what_the_store_lacked(result)
    status = result["status"]
    assert status["status"] == "finished" and status["attempts"] == 2, status
    assert status["targets"] == DEVICES and status["apns"]["accepted"] == DEVICES, status
    assert status["apns"]["failed"] == 0, status
