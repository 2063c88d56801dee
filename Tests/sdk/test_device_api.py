"""The Beams device API end to end, as push-notifications-swift 4.0.0 drives it (docs/BEAMS-PROTOCOL.md §4, §7, §8).

Flows run over TLS (`env`) like a real phone; the error catalogue runs over plain HTTP (`plain_env`), which is what
the server sees behind a reverse proxy. Every request carries the iOS SDK's headers.
"""
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from pusher_push_notifications import PushNotifications

from beams_client import (
    HTTP, IOS_HEADERS, IOSDevice, assert_empty_ok, assert_error, b64url, beams_claims, cli_token, devices_path,
    jwt_hs256, random_token,
)
from conftest import INSTANCE_ID, OTHER_INSTANCE_ID, OTHER_SECRET, SECRET

UNKNOWN_INSTANCE = "0b5c7e1a-93d4-4f2e-b8a6-1d2c3e4f5a6b"
TOO_MANY_INTERESTS = "Too many interests are being set for this device. Only 5000 interests per device are allowed."


@pytest.fixture(scope="module")
def tls(env):
    """One kept-alive connection, like URLSession's."""
    http = HTTP(env[0], keep_alive=True)
    yield http
    http.close()


@pytest.fixture(scope="module")
def plain(plain_env):
    return HTTP(plain_env[0])


def registered(http, interests=(), token=None):
    device = IOSDevice(http, token)
    device.register()
    if interests:
        assert_empty_ok(device.set_interests(set(interests)))
        device.interests = set(interests)
    return device


def python_sdk_token(user):
    return PushNotifications(instance_id=INSTANCE_ID, secret_key=SECRET).generate_token(user)["token"]


# MARK: iOS SDK flows (docs/BEAMS-PROTOCOL.md §4.5)


def test_ios_lifecycle_register_interests_metadata_user_stop(env, tls):
    server, _ = env
    device = IOSDevice(tls)
    body = device.register()
    assert body["initialInterestSet"] == []
    connections = tls.connections

    # setDeviceInterests sends the full set; raw `; , = @` are part of the path and the body.
    assert_empty_ok(device.set_interests({"news", "sport", "a;b,c=d@e"}))
    assert_empty_ok(device.subscribe("weather"))
    assert_empty_ok(device.unsubscribe("sport"))
    assert_empty_ok(device.subscribe("weather"))  # already followed: no-op
    assert_empty_ok(device.unsubscribe("never-followed"))
    assert device.server_interests() == sorted(["news", "a;b,c=d@e", "weather"])

    assert_empty_ok(device.sync_metadata({"sdkVersion": "4.0.0", "iosVersion": "17.2"}))
    got = device.get()
    assert got.status == 200, got
    assert got.json() == {"id": device.device_id, "userId": "", "metadata": {"sdkVersion": "4.0.0", "iosVersion": "17.2"}}

    assert_empty_ok(device.set_user(cli_token(server, "cli-user")))
    assert device.get().json()["userId"] == "cli-user"

    assert_empty_ok(device.delete())
    assert_error(device.get(), 404, "Could not find the device")
    # The SDK retries deletes forever; an already deleted device is still a success.
    assert_empty_ok(device.delete())
    # Every call, bodyless GET/DELETE with `Content-Type: application/json` included, kept the connection open.
    assert tls.connections == connections


def test_set_user_accepts_the_python_sdk_token(tls):
    device = registered(tls)
    assert_empty_ok(device.set_user(python_sdk_token("python-user")))
    assert device.get().json()["userId"] == "python-user"
    # The same user again (the app calls setUserId on every launch) is fine.
    assert_empty_ok(device.set_user(python_sdk_token("python-user")))


@pytest.mark.parametrize("tz", ["Asia/Tokyo", "America/New_York", "Pacific/Kiritimati"])
def test_set_user_accepts_python_sdk_tokens_made_on_non_utc_hosts(tls, tz):
    # generate_token computes exp with time.mktime on a UTC timetuple: off by the host's UTC offset (docs/BEAMS-PROTOCOL.md §7.1).
    script = ("import sys; from pusher_push_notifications import PushNotifications as P; "
              "print(P(instance_id=sys.argv[1], secret_key=sys.argv[2]).generate_token('tz-user')['token'])")
    out = subprocess.run([sys.executable, "-c", script, INSTANCE_ID, SECRET], capture_output=True, text=True,
                         timeout=20, env={**os.environ, "TZ": tz})
    assert out.returncode == 0, out.stderr
    device = registered(tls)
    assert_empty_ok(device.set_user(out.stdout.strip()))


def test_token_cli_refuses_what_the_server_would_refuse(env):
    server, _ = env
    base = [server.binary, "token", "--config", str(server.config_path)]
    for extra in (["--instance", UNKNOWN_INSTANCE, "--user", "u"], ["--instance", INSTANCE_ID, "--user", "x" * 165],
                  ["--instance", INSTANCE_ID, "--user", ""], ["--instance", INSTANCE_ID, "--user", "u", "--ttl", "0"]):
        out = subprocess.run(base + extra, capture_output=True, text=True, timeout=20)
        assert out.returncode != 0 and out.stdout == "", (extra, out)
    # The instance id is looked up like the API does, case-insensitively.
    out = subprocess.run(base + ["--instance", INSTANCE_ID.upper(), "--user", "u"], capture_output=True, text=True,
                         timeout=20)
    assert out.returncode == 0, out.stderr
    claims = json.loads(base64.urlsafe_b64decode(out.stdout.strip().split(".")[1] + "=="))
    assert claims["iss"] == f"https://{INSTANCE_ID}.pushnotifications.pusher.com"
    assert claims["sub"] == "u" and claims["exp"] - claims["iat"] == 86400


def test_clear_all_state_gives_a_fresh_device(env, tls):
    server, _ = env
    device = registered(tls, ["clear-a", "clear-b"])
    assert_empty_ok(device.set_user(cli_token(server, "clear-user")))
    old_id = device.device_id

    # clearAllState: stop (DELETE), then start + registerDeviceToken with the stored token.
    assert_empty_ok(device.delete())
    body = device.register()
    assert body["id"] != old_id
    assert body["initialInterestSet"] == []
    assert device.get().json()["userId"] == ""
    assert device.server_interests() == []
    assert_error(tls.request("GET", f"{devices_path()}/{old_id}", headers=IOS_HEADERS), 404)


def test_register_on_every_launch_keeps_id_interests_and_user(env, tls):
    server, _ = env
    device = registered(tls, ["launch-1", "launch-2"])
    assert_empty_ok(device.set_user(cli_token(server, "launch-user")))
    first_id = device.device_id
    for ios in ("17.3", "17.4"):
        device.metadata = {"sdkVersion": "4.0.0", "iosVersion": ios}
        body = device.register()
        assert body["id"] == first_id
        assert sorted(body["initialInterestSet"]) == ["launch-1", "launch-2"]
    got = device.get().json()
    assert got["userId"] == "launch-user"
    assert got["metadata"] == {"sdkVersion": "4.0.0", "iosVersion": "17.4"}


def test_token_case_does_not_make_a_second_device(tls):
    token = random_token()
    lower = IOSDevice(tls, token)
    lower.register()
    upper = IOSDevice(tls, token.upper())
    assert upper.register()["id"] == lower.device_id


def test_device_deleted_server_side_every_call_404s_then_the_sdk_recovers(env, tls):
    server, _ = env
    device = registered(tls, ["heal-a", "heal-b"])
    device.user_id = "heal-user"

    def token_provider(user):
        return python_sdk_token(user)

    assert_empty_ok(device.set_user(token_provider(device.user_id)))
    old_id = device.device_id
    # The backend deletes the user (and so the device) through the customer API.
    r = tls.request("DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/heal-user",
                    headers={"Authorization": f"Bearer {SECRET}"})
    assert_empty_ok(r)

    for call in (
        lambda: device.subscribe("heal-c"),
        lambda: device.unsubscribe("heal-a"),
        lambda: device.set_interests({"heal-a"}),
        lambda: device.sync_metadata({"sdkVersion": "4.0.0"}),
        lambda: device.set_user(token_provider("heal-user")),
        lambda: device.device_call("GET", "/interests"),
        lambda: device.get(),
    ):
        assert_error(call(), 404, "Could not find the device")

    # recreateDevice: register with the stored token, PUT the local interests, set the user again, replay the job.
    body = device.register()
    assert body["id"] != old_id
    assert body["initialInterestSet"] == []
    assert_empty_ok(device.set_interests(device.interests))
    assert_empty_ok(device.set_user(token_provider(device.user_id)))
    assert_empty_ok(device.subscribe("heal-c"))
    assert device.server_interests() == ["heal-a", "heal-b", "heal-c"]
    assert device.get().json()["userId"] == "heal-user"


# MARK: Registration errors (docs/BEAMS-PROTOCOL.md §4.4)


def register_raw(http, body, instance=INSTANCE_ID):
    return http.request("POST", devices_path(instance), body, IOS_HEADERS)


def test_register_without_token_is_400(plain):
    assert_error(register_raw(plain, {"bundleIdentifier": "x"}), 400, "Missing APNs token")
    assert_error(register_raw(plain, {"token": "", "bundleIdentifier": "x"}), 400, "Missing APNs token")


@pytest.mark.parametrize("token", [
    "zz" * 32,                 # not hex
    "abc" + "0" * 60,          # odd length
    "0123456789abcde",         # too short
    "notadevicetoken-apns",    # the text before the iOS tests hex-encode it
])
def test_register_with_a_bad_token_is_401_naming_the_device_token(plain, token):
    # The iOS SDK stops retrying when a 401's description contains "device token".
    assert_error(register_raw(plain, {"token": token, "bundleIdentifier": "x"}), 401, contains="device token")


def test_register_accepts_the_hex_encoded_fake_tokens_of_the_ios_integration_tests(plain):
    token = ("notadevicetoken-apns-" + "x" * 11).encode().hex()
    r = register_raw(plain, {"token": token, "bundleIdentifier": "x"})
    assert r.status == 200, r


def test_register_without_bundle_id_is_400(plain):
    assert_error(register_raw(plain, {"token": random_token()}), 400, "Missing App Bundle Identifier")
    assert_error(register_raw(plain, {"token": random_token(), "bundleIdentifier": ""}), 400,
                 "Missing App Bundle Identifier")


@pytest.mark.parametrize("body", [b"{not json", b"[1,2]", b"", b'"text"'])
def test_register_with_a_body_that_is_not_a_json_object_is_400(plain, body):
    assert_error(register_raw(plain, body), 400, "Failed to read body as a JSON object")


def test_metadata_that_is_not_a_json_object_is_400(plain):
    assert_error(register_raw(plain, {"token": random_token(), "bundleIdentifier": "x", "metadata": "17.0"}), 400)
    device = registered(plain)
    assert_error(device.device_call("PUT", "/metadata", b"{oops"), 400, "Failed to read body as a JSON object")
    assert_error(device.device_call("PUT", "/metadata", [1]), 400, "Failed to read body as a JSON object")
    assert device.get().json()["metadata"] == device.metadata


def test_unknown_instance_is_404_on_every_device_route(plain):
    assert_error(register_raw(plain, {"token": random_token(), "bundleIdentifier": "x"}, UNKNOWN_INSTANCE), 404,
                 "Could not find the instance")
    base = f"{devices_path(UNKNOWN_INSTANCE)}/some-device"
    for method, suffix, body in [("GET", "", None), ("DELETE", "", None), ("PUT", "/metadata", {}),
                                 ("GET", "/interests", None), ("PUT", "/interests", {"interests": []}),
                                 ("POST", "/interests/x", None), ("DELETE", "/interests/x", None),
                                 ("PUT", "/user", None)]:
        assert_error(plain.request(method, base + suffix, body, IOS_HEADERS), 404, "Could not find the instance")


def test_unknown_device_is_404_on_every_sub_resource(plain):
    device = IOSDevice(plain)
    device.device_id = "no-such-device"
    assert_error(device.get(), 404, "Could not find the device")
    assert_error(device.sync_metadata({"sdkVersion": "4.0.0"}), 404, "Could not find the device")
    assert_error(device.device_call("GET", "/interests"), 404, "Could not find the device")
    assert_error(device.set_interests({"a"}), 404, "Could not find the device")
    assert_error(device.subscribe("a"), 404, "Could not find the device")
    assert_error(device.unsubscribe("a"), 404, "Could not find the device")
    assert_error(device.set_user(python_sdk_token("u")), 404, "Could not find the device")


def test_unknown_platform_is_404(plain):
    r = plain.request("POST", f"/device_api/v1/instances/{INSTANCE_ID}/devices/gcm",
                      {"token": random_token(), "bundleIdentifier": "x"}, IOS_HEADERS)
    assert_error(r, 404)


# MARK: Interest names (docs/BEAMS-PROTOCOL.md §8)


def test_interest_names_raw_and_percent_encoded_are_the_same_interest(plain):
    device = registered(plain)
    assert_empty_ok(device.subscribe("a;b,c=d@e"))                    # iOS: raw
    assert_empty_ok(device.subscribe("a%3Bb%2Cc%3Dd%40e"))            # web: encodeURIComponent
    assert_empty_ok(device.subscribe("Z_-=@,.;09"))
    assert device.server_interests() == ["Z_-=@,.;09", "a;b,c=d@e"]
    assert_empty_ok(device.unsubscribe("a%3bb%2cc%3dd%40e"))          # lower-case escapes too
    assert device.server_interests() == ["Z_-=@,.;09"]


@pytest.mark.parametrize("name", ["a:b", "a%20b", "caf%C3%A9", "a*b", "a%2Fb", "a'b", "x" * 165, "a%zz", "%",
                                  "a%C3"])
def test_invalid_interest_names_in_the_path_are_400(plain, name):
    device = registered(plain)
    assert_error(device.subscribe(name), 400)
    assert_error(device.unsubscribe(name), 400)
    assert device.server_interests() == []


def test_interest_name_of_164_characters_is_the_longest(plain):
    device = registered(plain)
    assert_empty_ok(device.subscribe("x" * 164))
    assert_error(device.subscribe("y" * 165), 400)
    assert_empty_ok(device.set_interests({"z" * 164}))
    assert_error(device.set_interests({"z" * 165}), 400)
    assert device.server_interests() == ["z" * 164]


@pytest.mark.parametrize("body", [
    {"interests": ["ok", "not ok"]}, {"interests": [""]}, {"interests": [42]}, {"interests": "news"}, {},
    {"interests": None},
])
def test_put_interests_with_an_invalid_body_is_400_and_changes_nothing(plain, body):
    device = registered(plain, ["kept"])
    assert_error(device.device_call("PUT", "/interests", body), 400)
    assert device.server_interests() == ["kept"]


def test_put_interests_takes_5000_longest_names_and_refuses_5001(plain):
    device = registered(plain)
    names = [f"{i:05d}" + "n" * 159 for i in range(5001)]  # 164 characters each: the largest legal body
    assert_empty_ok(device.set_interests(names[:5000]))
    assert_error(device.set_interests(names), 400, TOO_MANY_INTERESTS)
    assert len(device.server_interests()) == 5000
    # Single subscribes cannot grow the set past 5000 either; re-adding a followed interest is still fine.
    assert_error(device.subscribe("one-more"), 400, TOO_MANY_INTERESTS)
    assert_empty_ok(device.subscribe(names[0]))
    assert_empty_ok(device.unsubscribe(names[0]))
    assert_empty_ok(device.subscribe("one-more"))
    assert len(device.server_interests()) == 5000


def test_put_interests_with_a_body_beyond_any_legal_set_is_400_not_413(plain):
    # Over the route's body limit only with more than 5000 names: the iOS SDK retries a 413 forever, a 400 never.
    device = registered(plain, ["kept"])
    names = [f"{i:05d}" + "n" * 159 for i in range(6000)]
    assert_error(device.set_interests(names), 400, TOO_MANY_INTERESTS)
    assert device.server_interests() == ["kept"]


def test_get_interests_pages_with_limit_and_cursor(plain):
    device = registered(plain, [f"page-{i:03d}" for i in range(250)])
    first = device.device_call("GET", "/interests").json()
    assert len(first["interests"]) == 100  # default and maximum page
    assert first["responseMetadata"]["nextCursor"]

    seen, cursor, pages = [], None, 0
    while True:
        query = "?limit=7" + (f"&cursor={cursor}" if cursor else "")
        r = device.device_call("GET", f"/interests{query}")
        assert r.status == 200, r
        body = r.json()
        assert len(body["interests"]) <= 7
        seen += body["interests"]
        pages += 1
        cursor = body["responseMetadata"]["nextCursor"]
        if cursor is None:
            break
    assert seen == [f"page-{i:03d}" for i in range(250)]
    assert pages == 36  # 35 full pages and one of 5
    last = device.device_call("GET", "/interests?limit=100&cursor=page-199").json()
    assert len(last["interests"]) == 50
    assert "nextCursor" in last["responseMetadata"] and last["responseMetadata"]["nextCursor"] is None


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=abc", "limit=-1", "limit=", "limit=1.5"])
def test_get_interests_with_an_invalid_limit_is_400(plain, query):
    device = registered(plain, ["x"])
    assert_error(device.device_call("GET", f"/interests?{query}"), 400)


@pytest.mark.parametrize("cursor", ["not%20a%20cursor", "%C3%A9", "x" * 165])
def test_get_interests_with_an_invalid_cursor_is_400(plain, cursor):
    device = registered(plain, ["x"])
    assert_error(device.device_call("GET", f"/interests?cursor={cursor}"), 400)


# MARK: PUT …/user: Beams token verification (docs/BEAMS-PROTOCOL.md §7.2)


def now():
    return int(time.time())


@pytest.mark.parametrize("header,description", [
    (None, "`Authorization` header token is missing"),
    ("", "`Authorization` header token is missing"),
    ("Basic dXNlcjpwYXNz", "`Authorization` header token is malformed"),
    ("Bearer", "`Authorization` header token is malformed"),
    ("Bearer not-a-jwt", "`Authorization` header token is malformed"),
    ("Bearer a.b.c", "`Authorization` header token is malformed"),
])
def test_set_user_with_a_missing_or_malformed_authorization_is_401(plain, header, description):
    device = registered(plain)
    headers = dict(IOS_HEADERS)
    if header is not None:
        headers["Authorization"] = header
    assert_error(plain.request("PUT", f"{devices_path()}/{device.device_id}/user", None, headers), 401, description)
    assert device.get().json()["userId"] == ""


def test_set_user_with_a_token_signed_by_another_secret_is_401(plain):
    device = registered(plain)
    assert_error(device.set_user(jwt_hs256(beams_claims("u"), secret="not-the-secret")), 401)
    assert device.get().json()["userId"] == ""


def test_set_user_with_an_expired_token_is_401(plain):
    device = registered(plain)
    token = jwt_hs256(beams_claims("u", now=now() - 86400 - 3600))
    assert_error(device.set_user(token), 401, "Invalid JWT claims: Token is expired")


def test_set_user_with_iat_in_the_future_beyond_the_leeway_is_401(plain):
    device = registered(plain)
    token = jwt_hs256(beams_claims("u", iat=now() + 3600))
    assert_error(device.set_user(token), 401, "Invalid JWT claims: Token used before issued")
    # A clock a few seconds ahead (the classic support thread) is absorbed by the leeway.
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("u", iat=now() + 30))))


@pytest.mark.parametrize("missing,description", [
    ("exp", "Missing expiration (exp) field in JWT"),
    ("sub", "Missing subject (sub) field in JWT"),
    ("iss", "Missing issuer (iss) field in JWT"),
])
def test_set_user_with_a_missing_claim_is_400(plain, missing, description):
    device = registered(plain)
    assert_error(device.set_user(jwt_hs256(beams_claims("u", **{missing: None}))), 400, description)


@pytest.mark.parametrize("sub", ["", "x" * 165, "é" * 83])
def test_set_user_with_a_subject_outside_1_to_164_bytes_is_400(plain, sub):
    device = registered(plain)
    assert_error(device.set_user(jwt_hs256(beams_claims(sub))), 400,
                 "JWT subject (sub) must be between 1-164 characters long")


def test_set_user_with_a_subject_of_164_bytes_is_accepted(plain):
    device = registered(plain)
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("x" * 164))))


@pytest.mark.parametrize("issuer", [
    f"https://{UNKNOWN_INSTANCE}.pushnotifications.pusher.com",
    f"http://{INSTANCE_ID}.pushnotifications.pusher.com",
    f"https://{INSTANCE_ID}.pushnotifications.pusher.com.evil.example",
    "https://pushnotifications.pusher.com",
    INSTANCE_ID,
])
def test_set_user_with_a_wrong_issuer_is_403(plain, issuer):
    device = registered(plain)
    assert_error(device.set_user(jwt_hs256(beams_claims("u", iss=issuer))), 403, "Invalid JWT issuer")


@pytest.mark.parametrize("issuer", [
    f"{INSTANCE_ID}.pushnotifications.pusher.com",                    # server-Swift 2.0.0 (no scheme)
    f"https://{INSTANCE_ID.upper()}.pushnotifications.pusher.com",    # instance id in another case
])
def test_set_user_accepts_the_issuer_variants_the_sdks_write(plain, issuer):
    device = registered(plain)
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("u", iss=issuer))))


def test_set_user_refuses_alg_none(plain):
    device = registered(plain)
    header = b64url(b'{"alg":"none","typ":"JWT"}')
    claims = b64url(json.dumps(beams_claims("u")).encode())
    assert_error(device.set_user(f"{header}.{claims}."), 401)
    # alg none with a valid HS256 signature attached is refused as well.
    signed = jwt_hs256(beams_claims("u"))
    assert_error(device.set_user(f"{header}.{claims}.{signed.split('.')[2]}"), 401)
    assert device.get().json()["userId"] == ""


def asymmetric_token(alg, claims):
    """A token signed with a fresh RSA or EC key; returns it with the key's public PEM."""
    header = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    message = f"{header}.{body}".encode()
    if alg == "RS256":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    else:
        key = ec.generate_private_key(ec.SECP256R1())
        r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"{header}.{body}.{b64url(signature)}", public.decode()


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_set_user_refuses_asymmetric_tokens(plain, alg):
    device = registered(plain)
    token, public_pem = asymmetric_token(alg, beams_claims("u"))
    assert_error(device.set_user(token), 401)
    # HS256 keyed with the public key (the classic algorithm confusion) is just a bad signature.
    assert_error(device.set_user(jwt_hs256(beams_claims("u"), secret=public_pem)), 401)
    assert device.get().json()["userId"] == ""


def test_set_user_refuses_a_different_user_and_accepts_the_same_one(plain):
    device = registered(plain)
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("first"))))
    assert_error(device.set_user(jwt_hs256(beams_claims("second"))), 400,
                 "A User Id is already associated with this device.")
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("first"))))
    assert device.get().json()["userId"] == "first"


def test_the_101st_device_of_a_user_is_400_with_the_default_limit(plain):
    # Beams documents 422, which the iOS SDK retries forever; 400 stops it (docs/API.md).
    claims = beams_claims("busy-user")
    devices = []
    for _ in range(100):
        device = registered(plain)
        assert_empty_ok(device.set_user(jwt_hs256(claims)))
        devices.append(device)
    extra = registered(plain)
    assert_error(extra.set_user(jwt_hs256(claims)), 400, "User already has reached the maximum of 100 devices.")
    # A device already bound to the user is still fine at the limit.
    assert_empty_ok(devices[0].set_user(jwt_hs256(claims)))
    # Deleting one frees a place.
    assert_empty_ok(devices[1].delete())
    assert_empty_ok(extra.set_user(jwt_hs256(claims)))


def test_the_device_limit_per_user_follows_the_config(limited_env):
    http = HTTP(limited_env[0])
    claims = beams_claims("small-user")
    for _ in range(3):
        assert_empty_ok(registered(http).set_user(jwt_hs256(claims)))
    assert_error(registered(http).set_user(jwt_hs256(claims)), 400,
                 "User already has reached the maximum of 3 devices.")


# MARK: HTTP level


def test_unknown_route_is_a_json_404(plain):
    assert_error(plain.request("GET", "/no/such/route", headers=IOS_HEADERS), 404)
    assert_error(plain.request("POST", "/device_api/v2/instances/x/devices/apns", {}, IOS_HEADERS), 404)


def test_wrong_method_is_405_with_allow(plain):
    device = registered(plain)
    r = device.device_call("PATCH", "", {})
    assert_error(r, 405)
    # OPTIONS: the CORS preflight every device route answers (docs/API.md, CORS).
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "HEAD", "DELETE", "OPTIONS"}
    r = plain.request("GET", devices_path(), headers=IOS_HEADERS)
    assert_error(r, 405)
    assert [m.strip() for m in r.headers["allow"].split(",")] == ["OPTIONS", "POST"]
    r = plain.request("GET", f"/customer_api/v1/instances/{INSTANCE_ID}/users/some/user", headers=IOS_HEADERS)
    assert_error(r, 405)
    assert [m.strip() for m in r.headers["allow"].split(",")] == ["DELETE"]


def test_chunked_request_bodies_are_read(plain):
    # OkHttp and URLSession stream bodies of unknown length with chunked transfer coding.
    device = IOSDevice(plain)
    body = json.dumps({"token": device.token, "bundleIdentifier": "x"}).encode()
    conn = http.client.HTTPConnection(plain.host, plain.port, timeout=10)
    try:
        conn.request("POST", devices_path(), body=iter([body[:10], body[10:]]), headers=IOS_HEADERS,
                     encode_chunked=True)
        r = conn.getresponse()
        assert r.status == 200, r.read()
        device.device_id = json.loads(r.read())["id"]
        conn.request("PUT", f"{devices_path()}/{device.device_id}/interests", encode_chunked=True,
                     body=iter([b'{"interests":', b'["chunked-a","chunked-b"]}']), headers=IOS_HEADERS)
        r = conn.getresponse()
        assert r.status == 200, r.read()
        r.read()
    finally:
        conn.close()
    assert device.server_interests() == ["chunked-a", "chunked-b"]


def raw_exchange(plain, chunks, read_until_count, wait_for_continue=False):
    """Writes `chunks` on one socket and reads until `read_until_count` final responses arrived; with
    `wait_for_continue`, each chunk after the first is sent only after the interim `100 Continue`."""
    with socket.create_connection((plain.host, plain.port), timeout=10) as sock:
        data = b""
        for i, chunk in enumerate(chunks):
            if i and wait_for_continue:
                while b"100 Continue" not in data:
                    data += sock.recv(65536)
            sock.sendall(chunk)
        while data.count(b"HTTP/1.1 ") - data.count(b"HTTP/1.1 100") < read_until_count:
            more = sock.recv(65536)
            if not more:
                break
            data += more
        return data


def test_pipelined_requests_are_answered_in_order(plain):
    device = registered(plain, ["pipe-a"])
    get = (f"GET {devices_path()}/{device.device_id}/interests HTTP/1.1\r\nHost: x\r\n"
           "Content-Type: application/json\r\n\r\n").encode()
    body = b'{"interests":["pipe-b"]}'
    put = (f"PUT {devices_path()}/{device.device_id}/interests HTTP/1.1\r\nHost: x\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    data = raw_exchange(plain, [get + put + get], 3)
    assert data.count(b"HTTP/1.1 200 OK") == 3, data
    assert data.index(b'"pipe-a"') < data.rindex(b'"pipe-b"'), data


def test_expect_100_continue_body_is_read(plain):
    # curl sends `Expect: 100-continue` for bodies over 1 KiB, e.g. a large PUT interests.
    device = registered(plain)
    body = json.dumps({"interests": [f"curl-{i:03d}" for i in range(200)]}).encode()
    head = (f"PUT {devices_path()}/{device.device_id}/interests HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n").encode()
    data = raw_exchange(plain, [head, body], 1, wait_for_continue=True)
    assert data.startswith(b"HTTP/1.1 100 Continue"), data
    assert b"HTTP/1.1 200 OK" in data, data
    assert len(device.server_interests()) == 200


def test_head_is_get_without_a_body(plain):
    device = registered(plain)
    get = device.get()
    head = device.device_call("HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["content-length"] == get.headers["content-length"] == str(len(get.body))
    device.device_id = "missing"
    missing = device.device_call("HEAD")
    assert missing.status == 404 and missing.body == b""


# MARK: Instances are isolated


def test_a_device_is_only_visible_through_its_own_instance(plain):
    token = random_token()
    here = registered(plain, ["shared"], token=token)
    there = IOSDevice(plain, token, instance=OTHER_INSTANCE_ID)
    there.register()
    assert there.device_id != here.device_id
    assert there.server_interests() == []
    # Device ids are scoped to their instance.
    spy = IOSDevice(plain, instance=OTHER_INSTANCE_ID)
    spy.device_id = here.device_id
    assert_error(spy.get(), 404, "Could not find the device")
    assert_error(spy.subscribe("x"), 404, "Could not find the device")
    assert_empty_ok(spy.delete())
    assert here.get().status == 200


def test_a_beams_token_only_binds_devices_of_its_instance(plain):
    device = IOSDevice(plain, instance=OTHER_INSTANCE_ID)
    device.register()
    # Signed with another instance's secret: bad signature.
    assert_error(device.set_user(jwt_hs256(beams_claims("u"))), 401)
    # Signed with this instance's secret but naming another instance: wrong issuer.
    assert_error(device.set_user(jwt_hs256(beams_claims("u"), secret=OTHER_SECRET)), 403, "Invalid JWT issuer")
    assert_empty_ok(device.set_user(jwt_hs256(beams_claims("u", instance=OTHER_INSTANCE_ID), secret=OTHER_SECRET)))


def test_deleting_a_user_only_touches_that_instance(plain):
    here = registered(plain)
    assert_empty_ok(here.set_user(jwt_hs256(beams_claims("twin"))))
    there = IOSDevice(plain, instance=OTHER_INSTANCE_ID)
    there.register()
    assert_empty_ok(there.set_user(jwt_hs256(beams_claims("twin", instance=OTHER_INSTANCE_ID), secret=OTHER_SECRET)))
    path = f"/customer_api/v1/instances/{OTHER_INSTANCE_ID}/users/twin"
    assert_error(plain.request("DELETE", path, headers={"Authorization": f"Bearer {SECRET}"}), 401)
    assert_empty_ok(plain.request("DELETE", path, headers={"Authorization": f"Bearer {OTHER_SECRET}"}))
    assert there.get().status == 404
    assert here.get().json()["userId"] == "twin"
