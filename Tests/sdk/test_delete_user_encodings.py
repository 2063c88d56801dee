"""`DELETE …/users/{userId}` as each Beams server SDK encodes the user id (docs/API.md, Customer API).

Java (`URLEncoder.encode`), PHP (`urlencode`) and Ruby (`CGI.escape`) form-encode: a space becomes `+` and a plus
`%2B`. Python (`quote`), Node (`encodeURIComponent`) and Go (`url.PathEscape`) write a space as `%20`; Go leaves a
plus raw. The server tells them apart by `X-Pusher-Library`, so "John Smith" deletes "John Smith" from every SDK.
The paths and headers below are byte for byte what each SDK sends (sources cited in docs/API.md)."""
import pytest

from beams_client import HTTP, IOSDevice, assert_empty_ok, beams_claims, jwt_hs256
from conftest import INSTANCE_ID, SECRET

LIBRARIES = {
    "java": "pusher-push-notifications-server-java 1.1.1",
    "php": "pusher-push-notifications-php 2.0.0",
    "ruby": "pusher-push-notifications-ruby 2.0.3",
    "python": "pusher-push-notifications-python 2.0.2",
    "node": "pusher-push-notifications-node 1.2.7",
    "go": "pusher-push-notifications-go 1.1.1",
}

# user id → how each SDK writes it into the path.
ENCODED = {
    "John Smith": {"java": "John+Smith", "php": "John+Smith", "ruby": "John+Smith",
                   "python": "John%20Smith", "node": "John%20Smith", "go": "John%20Smith"},
    "a+b": {"java": "a%2Bb", "php": "a%2Bb", "ruby": "a%2Bb", "python": "a%2Bb", "node": "a%2Bb", "go": "a+b"},
    "mr x+y z@example.com": {"java": "mr+x%2By+z%40example.com", "php": "mr+x%2By+z%40example.com",
                             "ruby": "mr+x%2By+z%40example.com", "python": "mr%20x%2By%20z%40example.com",
                             "node": "mr%20x%2By%20z%40example.com", "go": "mr%20x+y%20z@example.com"},
}


@pytest.fixture(scope="module")
def http(env):
    return HTTP(env[0])


def device_of(http, user):
    device = IOSDevice(http)
    device.register()
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims(user))))
    return device


def exists(device):
    status = device.get().status
    assert status in (200, 404)
    return status == 200


def delete(http, raw_user, library=None, family="customer_api"):
    headers = {"Authorization": f"Bearer {SECRET}"}
    if library:
        headers["X-Pusher-Library"] = library
    return http.request("DELETE", f"/{family}/v1/instances/{INSTANCE_ID}/users/{raw_user}", headers=headers)


@pytest.mark.parametrize("sdk", sorted(LIBRARIES))
@pytest.mark.parametrize("user", sorted(ENCODED))
def test_each_sdk_deletes_the_user_it_names(http, sdk, user):
    target = device_of(http, user)
    # A bystander whose id is what a wrong reading of `+` would produce.
    confusable = user.replace(" ", "+") if " " in user else user.replace("+", " ")
    bystander = device_of(http, confusable)
    assert_empty_ok(delete(http, ENCODED[user][sdk], LIBRARIES[sdk]))
    assert not exists(target), f"{sdk} did not delete {user!r}"
    assert exists(bystander), f"{sdk} deleted {confusable!r} instead"
    assert_empty_ok(delete(http, ENCODED[confusable][sdk] if confusable in ENCODED else
                           confusable.replace(" ", "%20").replace("+", "%2B")))


def test_without_a_library_header_a_plus_is_a_literal_plus(http):
    plus, space = device_of(http, "p+q"), device_of(http, "p q")
    assert_empty_ok(delete(http, "p+q"))
    assert not exists(plus) and exists(space)
    assert_empty_ok(delete(http, "p%20q"))
    assert not exists(space)


def test_the_legacy_user_api_path_follows_the_same_rule(http):
    device = device_of(http, "legacy user")
    assert_empty_ok(delete(http, "legacy+user", LIBRARIES["php"], family="user_api"))
    assert not exists(device)


def test_a_form_encoded_slash_and_percent_survive(http):
    user = "a/b%c d"
    device = device_of(http, user)
    assert_empty_ok(delete(http, "a%2Fb%25c+d", LIBRARIES["java"]))
    assert not exists(device)
