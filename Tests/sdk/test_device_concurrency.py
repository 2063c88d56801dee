"""Device API calls racing each other: many phones at once, or one app whose jobs overlap (an app and its
notification service extension both registering, say). Each race is checked for the same end state a serial run
gives."""
import signal
from concurrent.futures import ThreadPoolExecutor

from beams_client import HTTP, IOSDevice, assert_empty_ok, beams_claims, jwt_hs256, random_token
from conftest import INSTANCE_ID, SECRET


def parallel(count, call):
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda i: call(i), range(count)))


def registered_devices(http, count):
    """`count` new phones, each registered (one after another: only what the test races runs at once)."""
    devices = [IOSDevice(http) for _ in range(count)]
    for device in devices:
        device.register()
    return devices


def test_concurrent_registrations_of_one_token_give_one_device(plain_env):
    http = HTTP(plain_env[0])
    token = random_token()

    def register(_):
        device = IOSDevice(http, token)
        return device.call("POST", body={"token": token, "bundleIdentifier": "x", "metadata": {}})

    responses = parallel(16, register)
    assert [r.status for r in responses] == [200] * 16, responses
    assert len({r.json()["id"] for r in responses}) == 1


def test_concurrent_subscribes_to_a_new_interest_all_count(plain_env):
    http = HTTP(plain_env[0])
    devices = registered_devices(http, 24)
    responses = parallel(24, lambda i: devices[i].subscribe("race-new-interest"))
    for r in responses:
        assert_empty_ok(r)
    r = http.request("GET", f"/admin_api/v1/instances/{INSTANCE_ID}/interests/race-new-interest",
                     headers={"Authorization": f"Bearer {SECRET}"})
    assert r.json()["subscribers"] == 24


def test_concurrent_set_user_never_exceeds_the_device_limit(limited_env):
    http = HTTP(limited_env[0])
    devices = registered_devices(http, 10)
    token = jwt_hs256(beams_claims("racing-user"))
    statuses = sorted(r.status for r in parallel(10, lambda i: devices[i].set_user(token)))
    assert statuses == [200] * 3 + [400] * 7, statuses


def test_acknowledged_device_state_survives_a_crash(plain_env):
    server = plain_env[0]
    http = HTTP(server)
    device = IOSDevice(http)
    device.register()
    assert_empty_ok(device.set_interests({"durable-a", "durable-b"}))
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("durable-user"))))
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    server.start()
    assert device.get().json()["userId"] == "durable-user"
    assert device.server_interests() == ["durable-a", "durable-b"]
    assert device.register()["id"] == device.device_id
