"""Retries belong to their run (issue #25, docs/API.md "Retries"): an FCM or Web Push retry waiting for its moment
ends at once when the publish is cancelled, is never scheduled past the publish's `expiresAt` or the message's own
TTL, and waits what `Retry-After` says when the service sent one. End to end through the real binary and the strict
FCM and push-service stand-ins (Tests/Support/mock_fcm.py, mock_push_service.py).

Each waiting retry here would wait 20 to 60 s before the fix, so every assertion below either times out or sees a
wrong state on the old code; with the fix each test takes a few seconds.
"""
import time

import pytest

from beams import alert, random_token, unique, wait_for
from test_publish_platforms import Platforms, fcm_token
from test_publish_schedule import rfc3339


@pytest.fixture(scope="module")
def platforms(tmp_path_factory):
    env = Platforms(tmp_path_factory.mktemp("e2e-retries"))
    yield env
    env.close()


@pytest.fixture(autouse=True)
def quota_answers_without_retry_after(platforms):
    """FCM's 429 without `Retry-After`: the server then waits the minute Firebase advises (FCMRetryPolicy)."""
    platforms.fcm.configure(retry_after_s=-1)
    yield
    platforms.fcm.configure(retry_after_s=1)
    platforms.fcm.clear_behaviours()


def body(interest, fcm=None, web=None, delivery=None):
    result = {"interests": [interest],
              "fcm": {"notification": {"title": "Retry", "body": "r"}, **(fcm or {})},
              "web": {"notification": {"title": "Retry", "body": "r"}, **(web or {})}}
    if delivery:
        result["x_delivery"] = delivery
    return result


def sends(platforms, token):
    return len(platforms.fcm.requests(token))


def pushes(platforms, subscription):
    return len([r for r in platforms.push.requests() if r.get("subscription") == subscription["id"]])


def final_status(platforms, publish_id, timeout):
    def ended():
        status = platforms.client.status(publish_id)
        return status if status["status"] not in ("queued", "running", "cancelling") else None
    return wait_for(ended, timeout=timeout, message=f"publish {publish_id} still running")


def test_cancel_ends_waiting_fcm_and_web_retries_at_once_and_answers_cancelled_with_final_counts(platforms):
    interest = unique("retry-cancel")
    limited = fcm_token("quota-")  # 429 QUOTA_EXCEEDED every time, no Retry-After: a 60 s wait
    fine = [fcm_token() for _ in range(2)]
    for token in [limited, *fine]:
        platforms.register("fcm", token, [interest])
    browser, _ = platforms.browser([interest], marker="rate-limited", retry_after="30")
    publish_id = platforms.client.publish("interests", body(interest))
    wait_for(lambda: sends(platforms, limited) == 1 and pushes(platforms, browser) == 1
             and all(sends(platforms, token) == 1 for token in fine), timeout=15)

    started = time.monotonic()
    r = platforms.client.cancel_raw(publish_id)
    took = time.monotonic() - started
    assert r.status_code == 200, r.text
    answer = r.json()
    # Before: the cancel waited its 10 s for the run, answered "cancelling", and the counts changed afterwards.
    assert answer["status"] == "cancelled", answer
    assert took < 8, took
    assert answer["fcm"]["accepted"] == 2 and answer["fcm"]["failedByReason"] == {"Cancelled": 1}, answer
    assert answer["web"]["failedByReason"] == {"Cancelled": 1}, answer
    assert answer["targets"] == 4, answer

    # The web retry would have gone out 30 s after its 429; the FCM one after 60 s. Neither ever does, and the
    # stored status is the answer's.
    time.sleep(1.5)
    assert sends(platforms, limited) == 1 and pushes(platforms, browser) == 1
    status = platforms.client.status(publish_id)
    assert status["status"] == "cancelled" and status["fcm"] == answer["fcm"] and status["web"] == answer["web"], status


def test_a_retry_past_expires_at_is_not_scheduled_and_the_publish_ends_expired(platforms):
    interest = unique("retry-window")
    limited = fcm_token("quota-")
    fine = fcm_token()
    for token in (limited, fine):
        platforms.register("fcm", token, [interest])
    browser, _ = platforms.browser([interest], marker="rate-limited", retry_after="20")
    expires_at = time.time() + 8
    publish_id = platforms.client.publish("interests", body(interest, delivery={"expiresAt": rfc3339(expires_at)}))

    # Before: the retries went out 60 s and 20 s later, after the window, and the publish ended `finished`.
    status = final_status(platforms, publish_id, timeout=12)
    assert status["status"] == "expired", status
    assert status["fcm"]["accepted"] == 1 and status["fcm"]["failedByReason"] == {"Expired": 1}, status
    assert status["web"]["failedByReason"] == {"Expired": 1}, status
    assert sends(platforms, limited) == 1 and pushes(platforms, browser) == 1


def test_the_message_ttl_bounds_retries_and_a_retry_after_within_it_is_honoured(platforms):
    interest = unique("retry-ttl")
    limited = fcm_token("quota-")
    platforms.register("fcm", limited, [interest])
    late, _ = platforms.browser([interest], marker="rate-limited", retry_after="20")
    soon, _ = platforms.browser([interest], marker="rate-limited", retry_after="1", marker_times=1)
    started = time.monotonic()
    publish_id = platforms.client.publish("interests", body(interest, fcm={"time_to_live": 5},
                                                                web={"time_to_live": 5}))

    # Before: the retries went out after 60 s (FCM) and 20 s (web), long past the messages' 5 s TTL.
    status = final_status(platforms, publish_id, timeout=12)
    assert time.monotonic() - started < 8
    assert status["status"] == "finished", status  # the TTL is the message's, not the publish's window
    assert status["fcm"]["failedByReason"] == {"Expired": 1}, status
    assert status["web"]["accepted"] == 1 and status["web"]["failedByReason"] == {"Expired": 1}, status
    assert sends(platforms, limited) == 1 and pushes(platforms, late) == 1
    assert pushes(platforms, soon) == 2, "its Retry-After: 1 lies within the TTL: retried and accepted"


def test_fcm_retry_after_of_one_second_is_honoured_and_a_32_device_publish_does_not_wait_a_minute(platforms):
    interest = unique("retry-after")
    once = fcm_token()
    tokens = [once, *(fcm_token() for _ in range(31))]
    for token in tokens:
        platforms.register("fcm", token, [interest])
    platforms.fcm.configure(retry_after_s=1)
    platforms.fcm.behave(once, "quota", times=1)
    started = time.monotonic()
    publish_id = platforms.client.publish("interests", {"interests": [interest],
                                                        "fcm": {"notification": {"title": "Retry", "body": "r"}}})

    # Before: `429 QUOTA_EXCEEDED` waited at least 60 s whatever `Retry-After` said, holding the publish `running`.
    status = final_status(platforms, publish_id, timeout=12)
    assert time.monotonic() - started < 8
    assert status["status"] == "finished" and status["fcm"]["accepted"] == 32, status
    assert sends(platforms, once) == 2


def test_cancel_ends_a_waiting_apns_retry_within_a_second(platforms):
    interest = unique("retry-apns")
    token = random_token()
    platforms.register("apns", token, [interest])
    # Every answer `429 TooManyRequests`: the APNs client retries at least a second apart, five attempts in all.
    platforms.apns.behave(token, status=429, reason="TooManyRequests")
    publish_id = platforms.client.publish("interests", {"interests": [interest], "apns": alert("Retry", "r")})
    wait_for(lambda: len(platforms.apns.requests_for(token)) >= 1, timeout=10)

    r = platforms.client.cancel_raw(publish_id)
    assert r.status_code == 200, r.text
    answer = r.json()
    # Before: the cancel waited out the retries (about 4 s) and counted the last answer, `TooManyRequests`.
    assert answer["status"] == "cancelled" and answer["apns"]["failedByReason"] == {"Cancelled": 1}, answer
    sent = len(platforms.apns.requests_for(token))
    time.sleep(1.5)
    assert len(platforms.apns.requests_for(token)) == sent < 5
