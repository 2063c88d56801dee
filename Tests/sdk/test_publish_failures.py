"""APNs failure answers → the right device health, request counts at the mock and publish counters."""
import time

import pytest

from beams import Beams, alert, random_token, unique


@pytest.fixture(scope="module")
def beams(env):
    server, mock = env
    return Beams(server), mock


def publish_one(client, mock, behaviour=None, environment=None, apns=None):
    """Registers one device on a fresh interest, scripts the mock for its token, publishes, waits for the end."""
    interest, token = unique("fail"), random_token()
    device_id = client.register(token, [interest], environment=environment)
    if behaviour is not None:
        mock.behave(token, **behaviour)
    publish_id = client.publish("interests", {"interests": [interest], "apns": apns or alert()})
    return token, device_id, interest, client.wait_finished(publish_id)


def statuses(mock, token):
    return [r["status"] for r in mock.requests_for(token)]


def now_ms():
    return int(time.time() * 1000)


def test_unregistered_after_last_registration_invalidates_the_device(beams):
    client, mock = beams
    interest, token = unique("gone"), random_token()
    device_id = client.register(token, [interest])
    time.sleep(0.01)
    mock.behave(token, status=410, reason="Unregistered", timestamp=now_ms())
    status = client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert()}))
    assert status["apns"]["failedByReason"] == {"Unregistered": 1}, status
    assert status["devicesRemoved"] == 1
    device = client.device(device_id)
    assert device["valid"] is False
    assert device["lastDelivery"]["status"] == 410
    assert statuses(mock, token) == [410]
    # An invalid device is no longer a target.
    again = client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert()}))
    assert again["targets"] == 0
    assert statuses(mock, token) == [410]
    # Registering the token again makes it valid and a target again.
    assert client.register(token, [interest]) == device_id
    assert client.device(device_id)["valid"] is True


def test_unregistered_before_last_registration_keeps_the_device(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(
        client, mock, {"status": 410, "reason": "Unregistered", "timestamp": now_ms() - 3_600_000})
    assert status["apns"]["failedByReason"] == {"Unregistered": 1}
    assert status["devicesRemoved"] == 0
    assert client.device(device_id)["valid"] is True
    assert statuses(mock, token) == [410]


def test_bad_device_token_on_declared_environment_invalidates_without_retry(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(
        client, mock, {"status": 400, "reason": "BadDeviceToken"}, environment="sandbox")
    assert statuses(mock, token) == [400]
    assert status["apns"]["failedByReason"] == {"BadDeviceToken": 1}
    assert status["apns"]["environmentRetries"] == 0
    assert status["devicesRemoved"] == 1
    device = client.device(device_id)
    assert device["valid"] is False
    assert device["environment"] == "sandbox" and device["environmentDeclared"] is True


def test_bad_device_token_on_defaulted_environment_retries_in_the_other_one(beams):
    client, mock = beams
    token, device_id, interest, status = publish_one(
        client, mock, {"status": 400, "reason": "BadDeviceToken", "times": 1})
    assert statuses(mock, token) == [400, 200]
    assert status["apns"]["environmentRetries"] == 1
    assert status["apns"]["accepted"] == 1
    assert status["apns"]["failed"] == 0
    assert status["targets"] == 1
    assert status["devicesRemoved"] == 0
    device = client.device(device_id)
    assert device["valid"] is True
    # The instance defaults to sandbox; the retry proved production, and the store remembers it (still as a
    # defaulted environment: a later BadDeviceToken may still try the other one).
    assert device["environment"] == "production"
    assert device["environmentDeclared"] is False
    # The next publish goes straight to the corrected environment: one request, no retry.
    again = client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert()}))
    assert again["apns"]["environmentRetries"] == 0 and again["apns"]["accepted"] == 1
    assert statuses(mock, token) == [400, 200, 200]


def test_bad_device_token_in_both_environments_invalidates_after_one_retry(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 400, "reason": "BadDeviceToken"})
    assert statuses(mock, token) == [400, 400]
    assert status["apns"]["environmentRetries"] == 1
    assert status["apns"]["failedByReason"] == {"BadDeviceToken": 1}
    assert status["devicesRemoved"] == 1
    assert client.device(device_id)["valid"] is False


def test_device_token_not_for_topic_invalidates_without_retry(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 400, "reason": "DeviceTokenNotForTopic"})
    assert statuses(mock, token) == [400]
    assert status["apns"]["failedByReason"] == {"DeviceTokenNotForTopic": 1}
    assert status["devicesRemoved"] == 1
    assert client.device(device_id)["valid"] is False


def test_too_many_requests_is_retried_until_accepted(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 429, "reason": "TooManyRequests", "times": 2})
    assert statuses(mock, token) == [429, 429, 200]
    assert status["apns"]["accepted"] == 1 and status["apns"]["failed"] == 0
    assert client.device(device_id)["valid"] is True


def test_service_unavailable_then_recovery_is_accepted(beams):
    client, mock = beams
    token, _, _, status = publish_one(client, mock, {"status": 503, "reason": "ServiceUnavailable", "times": 1})
    assert statuses(mock, token) == [503, 200]
    assert status["apns"]["accepted"] == 1 and status["apns"]["failed"] == 0


def test_internal_server_error_forever_is_bounded_and_counted_failed(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 500, "reason": "InternalServerError"})
    seen = statuses(mock, token)
    # The default retry policy allows 5 attempts in total.
    assert seen == [500] * 5, seen
    assert status["apns"]["failedByReason"] == {"InternalServerError": 1}
    assert status["apns"]["accepted"] == 0
    assert status["devicesRemoved"] == 0
    assert client.device(device_id)["valid"] is True


def test_payload_over_4096_bytes_fails_every_target_locally(beams):
    client, mock = beams
    interest = unique("big")
    tokens = client.register_devices(3, [interest])
    publish_id = client.publish("interests", {"interests": [interest],
                                              "apns": {"aps": {"alert": "x"}, "data": {"blob": "b" * 5000}}})
    status = client.wait_finished(publish_id)
    assert status["targets"] == 3
    assert status["apns"]["failedByReason"] == {"PayloadTooLarge": 3}, status
    assert status["devicesRemoved"] == 0
    for token in tokens:
        assert mock.requests_for(token) == []


@pytest.mark.parametrize("action", ["goaway", "drop", "goaway_unanswered"])
def test_connection_loss_mid_publish_still_delivers_to_every_device(beams, action):
    client, mock = beams
    interest = unique(action)
    tokens = client.register_devices(120, [interest])
    before = mock.stats()
    # Slow answers keep many streams in flight when the connection goes away.
    mock.configure(delay_ms=20)
    try:
        for victim in (tokens[30], tokens[80]):
            mock.behave(victim, action=action, times=1, **({"status": 503, "reason": "Shutdown"}
                                                          if action != "drop" else {}))
        status = client.wait_finished(client.publish("interests", {"interests": [interest], "apns": alert()}))
    finally:
        mock.configure(delay_ms=0)
    assert status["targets"] == len(tokens)
    assert status["apns"]["accepted"] == len(tokens), status
    assert status["apns"]["failed"] == 0
    duplicates = 0
    for token in tokens:
        seen = statuses(mock, token)
        assert 200 in seen, (token, seen)
        duplicates += sum(1 for s in seen if s == 200) - 1
    # At-least-once: re-sent requests are bounded by what was in flight on the lost connections.
    assert duplicates <= len(tokens), duplicates
    after = mock.stats()
    if action == "drop":
        assert after["connections_dropped"] - before["connections_dropped"] == 2
    else:
        assert after["goaways_sent"] - before["goaways_sent"] == 2
    print(f"{action}: {len(tokens)} devices, {duplicates} duplicate deliveries, "
          f"{after['connections_opened'] - before['connections_opened']} new connections")


def test_expired_token_410_invalidates_like_unregistered(beams):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 410, "reason": "ExpiredToken",
                                                             "timestamp": now_ms() + 1000})
    assert statuses(mock, token) == [410]
    assert status["apns"]["failedByReason"] == {"ExpiredToken": 1}
    assert status["devicesRemoved"] == 1
    assert client.device(device_id)["valid"] is False


# ExpiredProviderToken: Apple refuses token changes more than once per 20 minutes, so a token minutes old is not
# re-minted and the request not re-sent (the refresh-and-resend path needs a token over 20 minutes old: covered by
# APNsClient's unit tests with a clock). InvalidProviderToken: rejected outright.
@pytest.mark.parametrize("reason", ["ExpiredProviderToken", "InvalidProviderToken"])
def test_provider_token_refused_on_a_fresh_token_is_a_counted_failure_sent_once_that_keeps_the_device(beams, reason):
    client, mock = beams
    token, device_id, _, status = publish_one(client, mock, {"status": 403, "reason": reason, "times": 1})
    assert statuses(mock, token) == [403]
    assert status["apns"]["failedByReason"] == {reason: 1}, status
    assert status["devicesRemoved"] == 0
    assert client.device(device_id)["valid"] is True
