"""Limits of the internet-facing APIs, end to end over real sockets (docs/API.md "Limits", docs/OPERATIONS.md):
per-address and per-instance rate limits with 429 + Retry-After, the device cap per instance, the interest caps,
unfollowed interests deleted, bodies on body-less routes, and the lockout after wrong secret keys.

A second client address is 127.0.0.2 (all of 127.0.0.0/8 is loopback), so "another client" is a real socket from
another address, not a header."""
import sqlite3
import time

import pytest

from beams_client import (
    HTTP, IOS_HEADERS, IOSDevice, assert_empty_ok, assert_error, beams_claims, devices_path, jwt_hs256, random_token,
)
from conftest import INSTANCE_ID, NO_CREDENTIALS_INSTANCE_ID, SECRET

OTHER = "127.0.0.2"
AUTH = {"Authorization": f"Bearer {SECRET}"}
TOO_MANY_INTERESTS = "Too many interests are being set for this device. Only 5000 interests per device are allowed."


def limited(server_env, name, **limits):
    environment, mock = server_env
    return environment.server(mock, {"limits": limits}, name=name)


@pytest.fixture(scope="module")
def server_env(environment):
    return environment, environment.mock()


def assert_rate_limited(response, description="Too many requests being made in quick succession"):
    body = assert_error(response, 429, description)
    assert body["error"] == "Rate Limited"
    retry_after = int(response.headers["retry-after"])
    assert 1 <= retry_after <= 3600, response.headers
    return retry_after


def registered(http, instance=INSTANCE_ID):
    device = IOSDevice(http, instance=instance)
    device.register()
    return device


def report(http, device_id, publish_id="pubid-none"):
    return http.request("POST", f"/reporting_api/v2/instances/{INSTANCE_ID}/events",
                        {"event": "Open", "publishId": publish_id, "deviceId": device_id,
                         "timestampSecs": int(time.time())}, IOS_HEADERS)


def db_count(server, sql, *args):
    db = sqlite3.connect(f"file:{server.directory / 'push.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchone()[0]
    finally:
        db.close()


# MARK: Per-address and per-instance rate limits


def burst(calls):
    """Runs `calls` (functions returning a response) back to back; returns their statuses and the seconds taken."""
    started = time.monotonic()
    responses = [call() for call in calls]
    return responses, time.monotonic() - started


def test_one_address_is_limited_while_another_address_still_passes(server_env):
    server = limited(server_env, "per-ip", ipRequestsPerSecond=1, ipBurst=8)
    here, there = HTTP(server, keep_alive=True), HTTP(server, keep_alive=True, source=OTHER)
    device = registered(there)
    mine = IOSDevice(here)
    responses, elapsed = burst([lambda: mine.call("POST", body={"token": random_token(), "bundleIdentifier": "b"})
                                for _ in range(14)])
    codes = [r.status for r in responses]
    assert codes[:8] == [200] * 8, codes  # the burst is always there
    assert set(codes) == {200, 429}, codes
    assert codes.count(200) <= 8 + int(elapsed) + 1, (codes, elapsed)  # then 1 per second
    assert_rate_limited(next(r for r in responses if r.status == 429))
    # The reporting API shares the address's budget.
    assert_rate_limited(report(here, device.device_id))
    # Another address is another client.
    assert device.get().status == 200
    assert report(there, device.device_id).status == 200
    # The bucket refills at the sustained rate.
    time.sleep(1.2)
    assert registered(here).device_id


def test_requests_for_unknown_instances_are_charged_too(server_env):
    server = limited(server_env, "per-ip-unknown", ipRequestsPerSecond=1, ipBurst=3)
    unknown = "0b5c7e1a-93d4-4f2e-b8a6-1d2c3e4f5a6b"
    http = HTTP(server, keep_alive=True)
    codes = [http.request("POST", devices_path(unknown), {"token": random_token()}, IOS_HEADERS).status
             for _ in range(5)]
    assert codes == [404, 404, 404, 429, 429], codes
    codes = [http.request("POST", f"/reporting_api/v2/instances/{unknown}/events", {}, IOS_HEADERS).status
             for _ in range(2)]
    assert codes == [429, 429], codes


def test_the_instance_budget_is_shared_by_every_address(server_env):
    server = limited(server_env, "per-instance", ipRequestsPerSecond=0, deviceRequestsPerSecondPerInstance=3,
                     reportsPerSecondPerInstance=2)
    here, there = HTTP(server, keep_alive=True), HTTP(server, keep_alive=True, source=OTHER)
    register = [lambda http=http: IOSDevice(http).call("POST", body={"token": random_token(), "bundleIdentifier": "b"})
                for http in (here, there) * 6]
    responses, elapsed = burst(register)
    codes = [r.status for r in responses]
    assert codes[:3] == [200] * 3, codes
    assert codes.count(200) <= 3 + int(elapsed * 3) + 1, (codes, elapsed)
    assert 429 in codes[0::2] and 429 in codes[1::2], codes  # both addresses were refused
    assert_rate_limited(next(r for r in responses if r.status == 429))
    # Another instance has its own budget.
    assert registered(there, NO_CREDENTIALS_INSTANCE_ID).device_id
    # The reporting API has its own per-instance budget (an unknown device is a 400, after the limit check).
    responses, elapsed = burst([lambda http=http: report(http, "apns-unknown") for http in (here, there) * 4])
    codes = [r.status for r in responses]
    assert codes[:2] == [400, 400] and 429 in codes, codes


def test_a_large_interest_set_costs_one_request_per_ten_names(server_env):
    server = limited(server_env, "interest-cost", ipRequestsPerSecond=1, ipBurst=600)
    http = HTTP(server, keep_alive=True)
    device = registered(http)
    names = [f"topic-{n:04d}" for n in range(5000)]
    assert_empty_ok(device.set_interests(names))  # 500 of the 599 tokens the registration left
    assert_rate_limited(device.set_interests(names))
    assert_rate_limited(device.set_interests(names[:990]))  # 99 tokens: 1 short
    # Small sets cost one request, like any other call; from another address it passes at once.
    other = HTTP(server, source=OTHER)
    assert_empty_ok(other.request("PUT", devices_path() + f"/{device.device_id}/interests", {"interests": ["a", "b"]},
                                  IOS_HEADERS))


def test_copies_of_one_name_are_charged_per_element_and_a_longer_array_than_the_cap_is_refused(server_env):
    server = limited(server_env, "interest-copies", ipRequestsPerSecond=1, ipBurst=600)
    http = HTTP(server, keep_alive=True)
    device = registered(http)
    # 229,000 copies of one name (916 KB, under the body limit): the cap's 400, not one token and a full parse.
    assert_error(device.set_interests(["a"] * 229_000), 400, TOO_MANY_INTERESTS)
    assert device.server_interests() == []
    assert_empty_ok(device.set_interests(["same"] * 5000))  # 500 tokens, stored once
    assert device.server_interests() == ["same"]
    assert_rate_limited(device.set_interests(["same"] * 5000))


def test_the_largest_interest_set_passes_a_full_bucket_whatever_the_burst(server_env):
    # 5,000 names cost 500 tokens, more than this burst: capped at a full bucket, so an SDK's retry gets through.
    server = limited(server_env, "interest-small-burst", ipRequestsPerSecond=5, ipBurst=60)
    http = HTTP(server, keep_alive=True)
    device = registered(http)
    names = [f"topic-{n:04d}" for n in range(5000)]
    # 300 names cost 30 tokens: the bucket is half full, six seconds from full (one token, as the registration alone
    # took, comes back in 0.2 s: a loaded machine's pause between two requests refilled it in one CI run).
    assert_empty_ok(device.set_interests(names[:300]))
    assert_rate_limited(device.set_interests(names))  # not full
    deadline = time.time() + 20
    while (r := device.set_interests(names)).status == 429 and time.time() < deadline:
        time.sleep(float(r.headers.get("retry-after", "1")))
    assert_empty_ok(r)


# MARK: Devices per instance


def test_new_devices_beyond_the_instance_cap_are_refused_and_known_ones_still_register(server_env):
    server = limited(server_env, "device-cap", maxDevicesPerInstance=3)
    http = HTTP(server)
    devices = [registered(http) for _ in range(3)]
    extra = IOSDevice(http)
    r = extra.call("POST", body={"token": extra.token, "bundleIdentifier": "b"})
    assert_error(r, 400, "Device could not be created: the instance has reached its device limit")
    # Every app launch re-registers: known tokens keep working at the cap.
    assert devices[0].register()["id"] == devices[0].device_id
    # The cap is per instance.
    assert registered(http, NO_CREDENTIALS_INSTANCE_ID).device_id
    # Deleting a device frees a place.
    assert_empty_ok(devices[1].delete())
    assert extra.register()["id"]
    metrics = http.request("GET", "/metrics").body.decode()
    assert "push_device_limit_refusals_total 1" in metrics, metrics


def test_interest_writes_beyond_the_instance_caps_are_refused_and_store_nothing(server_env):
    server = limited(server_env, "interest-caps", maxInterestsPerInstance=4, maxSubscriptionsPerInstance=6)
    http = HTTP(server)
    first, second = registered(http), registered(http)
    assert_empty_ok(first.set_interests(["a", "b", "c", "d"]))
    names_cap = "Interests could not be set: the instance has reached its limit of distinct interest names"
    assert_error(second.set_interests(["e"]), 400, names_cap)
    assert_error(second.subscribe("e"), 400, names_cap)
    assert_empty_ok(second.set_interests(["a", "b"]))  # followed names: subscriptions only (6)
    assert_error(second.subscribe("c"), 400,
                 "Interests could not be set: the instance has reached its subscription limit")
    assert second.server_interests() == ["a", "b"]
    # Names nobody follows any more free their place; so does a deleted device.
    assert_empty_ok(first.unsubscribe("d"))
    assert_empty_ok(second.subscribe("e"))
    assert_empty_ok(first.delete())
    assert_empty_ok(registered(http).set_interests(["x"]))  # a, b, e, x
    assert db_count(server, "SELECT count(*) FROM interests") == 4
    metrics = http.request("GET", "/metrics").body.decode()
    assert 'push_interest_limit_refusals_total{limit="interests"} 2' in metrics, metrics
    assert 'push_interest_limit_refusals_total{limit="subscriptions"} 1' in metrics, metrics


# MARK: Interests


def test_5000_interests_per_device_counting_single_adds(env):
    http = HTTP(env[0])
    device = registered(http)
    assert_empty_ok(device.set_interests([f"cap-{n:04d}" for n in range(5000)]))
    assert_error(device.subscribe("one-more"), 400, TOO_MANY_INTERESTS)
    assert_empty_ok(device.subscribe("cap-0001"))  # already followed: not a new interest
    assert_error(device.set_interests([f"cap-{n:04d}" for n in range(5001)]), 400, TOO_MANY_INTERESTS)
    assert_empty_ok(device.unsubscribe("cap-0002"))
    assert_empty_ok(device.subscribe("one-more"))
    assert len(device.server_interests()) == 5000


def test_interests_nobody_follows_are_deleted(env):
    server = env[0]
    http = HTTP(server)
    device, other = registered(http), registered(http)
    before = db_count(server, "SELECT count(*) FROM interests")
    for round_ in range(3):  # junk sets replaced again and again
        assert_empty_ok(device.set_interests([f"junk-{round_}-{n}" for n in range(300)] + ["kept"]))
    assert_empty_ok(other.subscribe("kept"))
    assert db_count(server, "SELECT count(*) FROM interests") == before + 301
    assert_empty_ok(device.set_interests(["kept"]))
    assert db_count(server, "SELECT count(*) FROM interests") == before + 1
    assert_empty_ok(device.delete())
    assert db_count(server, "SELECT count(*) FROM interests WHERE name = 'kept'") == 1  # `other` follows it
    assert_empty_ok(other.unsubscribe("kept"))
    assert db_count(server, "SELECT count(*) FROM interests") == before


# MARK: Bodies


@pytest.mark.parametrize("method,suffix", [
    ("GET", ""), ("DELETE", ""), ("GET", "/interests"), ("POST", "/interests/news"), ("DELETE", "/interests/news"),
    ("PUT", "/user"),
])
def test_routes_without_a_body_refuse_one_with_400(env, method, suffix):
    http = HTTP(env[0])
    device = registered(http)
    r = device.device_call(method, suffix, body={"padding": "x"})
    assert_error(r, 400, "This request takes no body")
    # The iOS SDK's own calls carry `Content-Type: application/json` and no body: fine.
    assert device.device_call("GET").status == 200


def test_register_and_metadata_bodies_are_sized_and_answer_400(env):
    http = HTTP(env[0])
    device = registered(http)
    big = {"token": device.token, "bundleIdentifier": "b", "metadata": {"x": "y" * 17000}}
    assert_error(device.call("POST", body=big), 400, "Request body size is too large (max 16KiB)")
    assert_error(device.sync_metadata({"x": "y" * 9000}), 400, "Request body size is too large (max 8KiB)")


# MARK: Wrong secret keys


def secret_routes():
    return [
        ("POST", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests",
         {"interests": ["x"], "apns": {"aps": {"alert": "a"}}}),
        ("DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/someone", None),
        ("GET", f"/admin_api/v1/instances/{INSTANCE_ID}/interests/news", None),
    ]


@pytest.mark.parametrize("method,path,body", secret_routes())
def test_an_address_guessing_the_secret_is_locked_out_while_the_backend_elsewhere_works(server_env, method, path,
                                                                                         body):
    server = limited(server_env, f"auth-{method.lower()}", authFailuresPerIP=3, authFailureWindowSeconds=60,
                     authLockoutSeconds=2)
    attacker, backend = HTTP(server), HTTP(server, source=OTHER)
    wrong = {"Authorization": "Bearer not-the-secret", "Content-Type": "application/json"}
    right = {**AUTH, "Content-Type": "application/json"}
    for _ in range(3):
        assert_error(attacker.request(method, path, body, wrong), 401, "Incorrect Secret Key")
    description = "Too many requests with an incorrect secret key from this address"
    assert_rate_limited(attacker.request(method, path, body, wrong), description)
    # Locked out: even the right key gets 429, so guesses learn nothing.
    retry_after = assert_rate_limited(attacker.request(method, path, body, right), description)
    assert retry_after <= 2
    # The real backend, elsewhere, is not affected; its own wrong key is counted separately.
    assert backend.request(method, path, body, right).status == 200
    assert_error(backend.request(method, path, body, wrong), 401)
    assert backend.request(method, path, body, right).status == 200
    # A missing header is not a guess.
    assert_error(backend.request(method, path, body, {}), 400, "Authorization header is missing")
    time.sleep(retry_after + 0.2)
    assert attacker.request(method, path, body, right).status == 200


# MARK: Behind a reverse proxy


def test_a_trusted_proxy_s_forwarded_for_names_the_client(server_env):
    server = limited(server_env, "proxy", ipRequestsPerSecond=1, ipBurst=2, trustedProxies=["127.0.0.1"])
    proxy, direct = HTTP(server, keep_alive=True), HTTP(server, keep_alive=True, source=OTHER)

    def get(http, forwarded_for):
        return http.request("GET", devices_path() + "/apns-x", headers={**IOS_HEADERS, "X-Forwarded-For": forwarded_for})

    assert [get(proxy, "203.0.113.1").status for _ in range(3)] == [404, 404, 429]
    assert get(proxy, "203.0.113.2").status == 404, "another client behind the same proxy"
    # The client's own claim, left of what the proxy appended, is not believed.
    assert get(proxy, "203.0.113.2, 203.0.113.1").status == 429
    # Not from the trusted proxy: the header is ignored and the socket address counts.
    assert [get(direct, f"198.51.100.{n}").status for n in range(3)] == [404, 404, 429]
