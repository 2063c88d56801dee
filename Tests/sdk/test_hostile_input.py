"""Hostile input on every route of the real release binary: no byte sequence may crash the process, get a 5xx or
have its connection dropped. Every answer is a 2xx or a Beams-shaped 4xx `{"error","description"}`, and the server
keeps answering `/health` after each batch.

The assertions are deliberately only "4xx Beams JSON or 2xx": what each route accepts may tighten (limits, rate
limits, reporting semantics) without this suite changing. The routes are the router's registrations (PublishAPI,
DeviceAPI, CustomerAPI, ReportingAPI, AdminAPI, OpsAPI in Sources/PushServer), and the CORS preflights (OPTIONS)
of the device and reporting routes.
"""
import json
import socket
import ssl
import time

import pytest
from test_android_web_devices import btoa, fcm_token, subscription

from beams_client import BUNDLE_ID, HTTP, b64url, beams_claims, jwt_hs256, random_token
from conftest import INSTANCE_ID, SECRET, Mock, Server, write_apns_key

AUTH = {"Authorization": f"Bearer {SECRET}"}
JSON = {"Content-Type": "application/json"}
DEVICE_BASE = f"/device_api/v1/instances/{INSTANCE_ID}/devices"
PUBLISH_BASE = f"/publish_api/v1/instances/{INSTANCE_ID}/publishes"
ADMIN_BASE = f"/admin_api/v1/instances/{INSTANCE_ID}"

# JSON tokens, as raw text, that the server must survive wherever a value may appear: numbers past every integer
# and float range, negative zero, non-JSON number spellings, every type, odd strings and nesting.
HOSTILE_VALUES = [
    "9999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "1" + "0" * 400, "1e308", "-1e308", "1e309", "-1e309", "-0", "-0.0", "0.5", "-1",
    "4.9e-324", "1e-400", "NaN", "-Infinity", "Infinity", "nan", "0x10", "01", "+1", "1.", ".5",
    "true", "false", "null", '""', '"x"', '"' + "\u00e9\u4e2d\U0001F600" * 50 + '"', '"' + "x" * 5000 + '"',
    r'"\ud800"', r'"\udfff\ud800"', '"\ud800"', r'"\u0000"', r'"a\u0000b\n\r\t\"\\"', '"\xff"',
    "[]", "{}", '[1,"a",null,{}]', '{"a":{"b":{"c":[{}]}}}', "[" * 40 + "]" * 40, '{"a":1,"a":2}',
]

# Whole bodies that are not a usable JSON object.
def structural_bodies(limit):
    deep = min(limit - 16, 100_000)
    return [
        b"", b" ", b"null", b"[]", b"[{}]", b'"{}"', b"42", b"1e999", b"true", b"{", b"}", b"{}}", b"{,}",
        b'{"a":}', b'{"a" 1}', b"{'a': 1}", b'{"a":1,}', b'{"a":1} trailing', b"\xef\xbb\xbf{}",
        b'{"token":"\xff\xfe"}', b'{"token":"\xed\xa0\x80"}', b'{"\xc0\xaf":1}', b"\x00{}", b"{}\x00",
        b'{"a":1,"a":1}', b"[" * deep, b"{\"a\":" * (deep // 5), b'{"a":[' + b"1," * (deep // 3) + b"1]}",
        b'{"' + b"k" * (limit // 2) + b'":1}', b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(limit // 12)) + b"}",
    ]


def assert_safe(response, what):
    """2xx, or 4xx with a Beams error body. Never 5xx."""
    assert response.status < 500, (what, response)
    if response.status >= 400:
        assert response.headers.get("content-type", "").startswith("application/json"), (what, response)
        body = response.json()
        assert isinstance(body, dict), (what, response)
        assert isinstance(body.get("error"), str) and body["error"], (what, response)
        assert isinstance(body.get("description"), str) and body["description"], (what, response)
    else:
        assert 200 <= response.status < 300, (what, response)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Plain HTTP, a rate limit high enough that every request reaches its validation instead of a 429."""
    directory = tmp_path_factory.mktemp("e2e-hostile")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, limits={"requestsPerSecondPerInstance": 1_000_000})
    yield server
    server.stop()
    mock.stop()


@pytest.fixture(scope="module")
def http(hostile):
    client = HTTP(hostile, keep_alive=True)
    yield client
    client.close()


@pytest.fixture(scope="module")
def device_id(http):
    r = http.request("POST", f"{DEVICE_BASE}/apns", {"token": random_token(), "bundleIdentifier": BUNDLE_ID}, JSON)
    assert r.status == 200, r
    return r.json()["id"]


def assert_alive(server, http):
    assert server.proc.poll() is None, server.log_path.read_text()[-3000:]
    r = http.request("GET", "/health")
    assert r.status == 200 and r.json()["status"] == "ok", r


# MARK: JSON bodies


def templates(device):
    """Route → a valid body, for the routes that read one. Every value in it is replaced by each hostile token."""
    now = int(time.time())
    apns = {"aps": {"alert": {"title": "t", "body": "b"}, "badge": 1, "sound": "default"}, "data": {"k": 1},
            "priority": 10, "expiration": now + 60, "collapse_id": "c", "push_type": "alert",
            "pusher": {"disable_delivery_tracking": False}}
    return {
        "register apns": ("POST", f"{DEVICE_BASE}/apns", 16 * 1024, {
            "token": random_token(), "bundleIdentifier": BUNDLE_ID, "environment": "sandbox",
            "metadata": {"sdkVersion": "4.0.0", "iosVersion": "17.0.1"}}),
        "register web": ("POST", f"{DEVICE_BASE}/web", 16 * 1024,
                         {"token": btoa(subscription()), "metadata": {"sdkVersion": "2.1.0"}}),
        "register fcm": ("POST", f"{DEVICE_BASE}/fcm", 16 * 1024, {
            "token": fcm_token(), "knownPreviousClientIds": ["__pusher__client__key__x"],
            "metadata": {"sdkVersion": "1.9.2", "androidVersion": "14"}}),
        "token refresh": ("PUT", f"{DEVICE_BASE}/fcm/{device}/token", 16 * 1024, {"token": fcm_token()}),
        "metadata": ("PUT", f"{DEVICE_BASE}/apns/{device}/metadata", 16 * 1024,
                     {"sdkVersion": "4.0.0", "iosVersion": "17.0.1"}),
        "interests": ("PUT", f"{DEVICE_BASE}/apns/{device}/interests", 900 * 1024, {"interests": ["a", "b-c"]}),
        "reporting": ("POST", f"/reporting_api/v2/instances/{INSTANCE_ID}/events", 16 * 1024, {
            "event": "Delivery", "publishId": "pubid-hostile", "deviceId": device, "userId": "hostile-user",
            "timestampSecs": now}),
        "publish interests": ("POST", f"{PUBLISH_BASE}/interests", 10 * 1024, {
            "interests": ["hostile-nobody"], "webhookUrl": None, "apns": apns, "fcm": None, "web": None}),
        "publish legacy": ("POST", PUBLISH_BASE, 10 * 1024, {"interests": ["hostile-nobody"], "apns": {"aps": {}}}),
        "publish users": ("POST", f"{PUBLISH_BASE}/users", 200 * 1024, {
            "users": ["hostile-nobody"], "apns": {"aps": {"alert": "x"}}, "fcm": {"notification": {}}}),
    }


def value_paths(value, prefix=()):
    """Every key path in a body (objects and the first element of arrays), outermost first."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield prefix + (key,)
            yield from value_paths(inner, prefix + (key,))
    elif isinstance(value, list) and value:
        yield prefix + (0,)


SENTINEL = "__HOSTILE_VALUE__"


def replaced(body, path, raw):
    """`body` as JSON text with the value at `path` replaced by the raw JSON token `raw`."""
    copy = json.loads(json.dumps(body))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = SENTINEL
    return json.dumps(copy).replace(json.dumps(SENTINEL), raw).encode("utf-8", "surrogatepass")


def bodies_for(body, limit):
    """Type swaps at every path, the path removed, an unknown key added, and the structural set."""
    out = []
    for path in value_paths(body):
        out += [replaced(body, path, raw) for raw in HOSTILE_VALUES]
        copy = json.loads(json.dumps(body))
        target = copy
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        out.append(json.dumps(copy).encode())
    out.append(json.dumps({**body, "unexpected": {"nested": [1, 2, 3]}, "\u0000": None}).encode())
    return out + structural_bodies(limit)


@pytest.mark.parametrize("route", list(templates("d").keys()))
def test_hostile_json_bodies_get_4xx_beams_errors(hostile, http, device_id, route):
    method, path, limit, body = templates(device_id)[route]
    headers = {**JSON, **AUTH} if path.startswith("/publish_api") else JSON
    for data in bodies_for(body, limit):
        assert_safe(http.request(method, path, data, headers), (route, data[:200]))
    assert_alive(hostile, http)


# MARK: Paths, query strings and bodies on every other route


def path_variants(device):
    """Route → requests with hostile path parameters and query values (all printable ASCII: what reaches the
    router after percent-decoding is what matters)."""
    odd = ["%00", "%ff", "%ed%a0%80", "%2F..%2F", "a" * 3000, "%25", "..", "-0", "9999999999999999", "1e308",
           "NaN", "%EF%BB%BF", "%E2%80%AE", "x%0d%0aSet-Cookie:%20a"]
    numbers = ["0", "-1", "-0", "101", "201", "9999999999999999", "9223372036854775808", "1e308", "-1e308", "NaN",
               "0x10", "%00", "", "1.5", "%205", "5%00", "%D9%A1"]
    out = {}
    out["device routes"] = (
        [("GET", f"{DEVICE_BASE}/apns/{p}") for p in odd] + [("DELETE", f"{DEVICE_BASE}/apns/{p}") for p in odd]
        + [("GET", f"{DEVICE_BASE}/{p}/{device}") for p in odd]
        + [("POST", f"{DEVICE_BASE}/apns/{device}/interests/{p}") for p in odd]
        + [("DELETE", f"{DEVICE_BASE}/apns/{device}/interests/{p}") for p in odd]
        + [("POST", f"/device_api/v1/instances/{p}/devices/apns") for p in odd])
    out["fcm and web routes"] = (
        [("PUT", f"{DEVICE_BASE}/fcm/{p}/token") for p in odd] + [("PUT", f"{DEVICE_BASE}/{p}/{device}/token") for p in odd]
        + [("GET", f"/device_api/v1/instances/{p}/web-vapid-public-key") for p in odd]
        + [("GET", f"/device_api/v1/instances/{INSTANCE_ID}/web-vapid-public-key?x={p}") for p in odd]
        + [("DELETE", f"{DEVICE_BASE}/web/{p}") for p in odd] + [("DELETE", f"{DEVICE_BASE}/fcm/{p}") for p in odd])
    out["preflights"] = (
        [("OPTIONS", f"{DEVICE_BASE}/web/{p}") for p in odd] + [("OPTIONS", f"{DEVICE_BASE}/{p}") for p in odd]
        + [("OPTIONS", f"/device_api/v1/instances/{p}/web-vapid-public-key") for p in odd]
        + [("OPTIONS", f"/reporting_api/v2/instances/{p}/events") for p in odd]
        + [("OPTIONS", f"/reporting_api/{p}") for p in odd])
    out["interest pages"] = (
        [("GET", f"{DEVICE_BASE}/apns/{device}/interests?limit={n}") for n in numbers]
        + [("GET", f"{DEVICE_BASE}/apns/{device}/interests?cursor={p}") for p in odd]
        + [("GET", f"{DEVICE_BASE}/apns/{device}/interests?limit=1&limit=2&cursor=&cursor=a")])
    out["publish status"] = (
        [("GET", f"{PUBLISH_BASE}?limit={n}") for n in numbers]
        + [("GET", f"{PUBLISH_BASE}/{p}") for p in odd])
    out["customer"] = (
        [("DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/{p}") for p in odd]
        + [("DELETE", f"/user_api/v1/instances/{INSTANCE_ID}/users/{p}/{p}") for p in odd])
    out["admin"] = (
        [("GET", f"{ADMIN_BASE}/devices/{p}") for p in odd]
        + [("GET", f"{ADMIN_BASE}/devices?token={p}&platform={p}") for p in odd]
        + [("GET", f"{ADMIN_BASE}/devices?token={p}") for p in odd]
        + [("GET", f"{ADMIN_BASE}/users/{p}") for p in odd]
        + [("GET", f"{ADMIN_BASE}/interests/{p}") for p in odd])
    out["reporting instance"] = [("POST", f"/reporting_api/v2/instances/{p}/events") for p in odd]
    out["ops"] = [("GET", "/health?x=%ff"), ("GET", "/ready?limit=1e308"), ("GET", "/metrics?x=%00"),
                  ("POST", "/health"), ("DELETE", "/metrics"), ("PUT", "/ready")]
    return out


@pytest.mark.parametrize("group", list(path_variants("d").keys()))
def test_hostile_paths_queries_and_bodies_on_every_route(hostile, http, device_id, group):
    bodies = [None, b"\xff\xfe\x00", b"[" * 5000, b'{"a":1e999}', json.dumps({"limit": 9999999999999999}).encode()]
    for method, path in path_variants(device_id)[group]:
        for headers in (AUTH, {"Authorization": "Bearer " + "x" * 2000}, {}):
            for body in bodies:
                assert_safe(http.request(method, path, body, {**JSON, **headers}), (method, path[:200], body))
    assert_alive(hostile, http)


# MARK: Beams user tokens (PUT …/user): hostile claims signed with the real secret, so they reach the claim checks


CLAIM_VALUES = [
    0, -1, -0.0, 1.5, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**400 // 10**100,
    9999999999999999, 1e308, -1e308, float("inf"), float("-inf"), float("nan"),
    "", "1700000000", "x" * 165, "x" * 4000, "\ud800", "\u0000", "\u202e", True, False, None, [], [1], {},
    {"nested": {"deeper": [1, {"x": 2}]}},
]


def claim_sets():
    now = int(time.time())
    for claim in ["exp", "iat", "nbf", "sub", "iss"]:
        for value in CLAIM_VALUES:
            claims = beams_claims("hostile-jwt-user", now=now)
            claims[claim] = value
            yield f"{claim}={value!r:.40}", claims
    yield "no claims", {}
    yield "claims not an object", [1, 2]


def raw_claims():
    """Claims that are not valid JSON (or not valid UTF-8), signed as they are."""
    now = int(time.time())
    iss = f"https://{INSTANCE_ID}.pushnotifications.pusher.com"
    return [
        b'{"sub":"u","iss":"%s","exp":%d,"exp":%d}' % (iss.encode(), now + 60, now + 60),
        b'{"sub":"u","iss":"%s","exp":NaN}' % iss.encode(),
        b'{"sub":"\xff","iss":"%s","exp":%d}' % (iss.encode(), now + 60),
        b'{"sub":"\xed\xa0\x80","iss":"%s","exp":%d}' % (iss.encode(), now + 60),
        b'\xef\xbb\xbf{"sub":"u","iss":"%s","exp":%d}' % (iss.encode(), now + 60),
        b'{"sub":"u","exp":' + b"9" * 5000 + b"}",
        b'{"sub":' + b"[" * 10_000 + b"}",
        b"", b"null", b"{",
    ]


def signed_raw(claims_bytes, header=b'{"alg":"HS256","typ":"JWT"}'):
    import hashlib
    import hmac
    signing_input = b64url(header) + "." + b64url(claims_bytes)
    signature = hmac.new(SECRET.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def user_path(http):
    r = http.request("POST", f"{DEVICE_BASE}/apns", {"token": random_token(), "bundleIdentifier": BUNDLE_ID}, JSON)
    assert r.status == 200, r
    return f"{DEVICE_BASE}/apns/{r.json()['id']}/user"


def test_hostile_jwt_claims_on_user_binding_get_4xx_beams_errors(hostile, http):
    path = user_path(http)
    tokens = []
    for name, claims in claim_sets():
        text = json.dumps(claims, allow_nan=True).encode("utf-8", "surrogatepass")
        tokens.append((name, signed_raw(text)))
    tokens += [(f"raw {raw[:40]!r}", signed_raw(raw)) for raw in raw_claims()]
    good = beams_claims("hostile-jwt-user")
    for header in [b'{"alg":"HS256","alg":"HS256"}', b'{"alg":1e999}', b'{"alg":["HS256"]}', b'{"alg":"none"}',
                   b'{"alg":"HS256","crit":["x"]}', b"[" * 1000, b'{"alg":"HS256","kid":"' + b"k" * 3000 + b'"}']:
        tokens.append((f"header {header[:40]!r}", signed_raw(json.dumps(good).encode(), header)))
    tokens += [("unsigned", jwt_hs256(good)[:-10]), ("garbage", "a.b.c"), ("dots", "." * 500),
               ("huge", "a" * 12_000), ("padding", jwt_hs256(good) + "=="), ("space", "x y z")]
    for name, token in tokens:
        assert_safe(http.request("PUT", path, headers={"Authorization": f"Bearer {token}"}), name)
    # A valid token still binds: the claim checks refused the hostile ones, not everything.
    r = http.request("PUT", user_path(http), headers={"Authorization": f"Bearer {jwt_hs256(good)}"})
    assert r.status == 200, r
    assert_alive(hostile, http)


def test_reporting_timestamp_that_crashed_the_process_is_answered(hostile, http, device_id):
    """The attacker's request from issue 10: `timestampSecs` 9999999999999999 trapped in Int64(Double)."""
    for seconds in ["9999999999999999", "9223372036854775807", "1e308", "-9223372036854775808"]:
        body = ('{"event":"delivery","publishId":"pubid-x","deviceId":"%s","timestampSecs":%s}'
                % (device_id, seconds)).encode()
        assert_safe(http.request("POST", f"/reporting_api/v2/instances/{INSTANCE_ID}/events", body, JSON), seconds)
    assert_alive(hostile, http)


# MARK: Raw bytes on the socket


def raw_exchange(server, data, timeout=5):
    """Sends bytes, reads until the server closes; returns (response bytes, seconds until the close)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        start = time.monotonic()
        sock.sendall(data)
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received, time.monotonic() - start
            received += chunk


def tls_client_hello():
    """A real ClientHello, as Python's OpenSSL writes it to a TLS server."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_tls_client_hello_on_the_plain_port_is_answered_400_and_closed_at_once(hostile):
    # The record up to its first 0x0A (supported_groups' type), as a first TCP segment may carry it: a parser that
    # waited for the end of the request line would hold the connection until the header timeout. The hello's 32
    # random bytes (and session id) hold a 0x0A in about one hello in six; such a hello is drawn again, so the
    # segment always reaches past them.
    for _ in range(100):
        hello = tls_client_hello()
        first_segment = hello.split(b"\n", 1)[0]
        if len(first_segment) > 50:
            break
    assert hello[:2] == b"\x16\x03"
    assert len(first_segment) > 50
    response, seconds = raw_exchange(hostile, first_segment, timeout=15)
    assert response.startswith(b"HTTP/1.1 400 "), response[:200]
    assert b"Connection: close" in response
    # The header timeout is 10 s: the answer comes from the first byte, not from a timeout.
    assert seconds < 2, seconds


def test_odd_methods_and_paths_do_not_grow_metrics(hostile, http):
    import random
    rng = random.Random(10)
    tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    before = len(http.request("GET", "/metrics").body)
    methods = []
    for i in range(300):
        method = "".join(rng.choice(tchars) for _ in range(2000 if i % 3 == 0 else rng.randint(1, 40)))
        methods.append(method)
        path = "/" + "/".join(f"seg{rng.getrandbits(64):x}" for _ in range(rng.randint(1, 6)))
        response, _ = raw_exchange(hostile, f"{method} {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode())
        status = int(response.split(b" ", 2)[1])
        assert status in (404, 405), response[:200]
    for method in ["get", "Get", "M-SEARCH", "PROPFIND"]:
        raw_exchange(hostile, f"{method} {DEVICE_BASE}/apns HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode())
    text = http.request("GET", "/metrics").body.decode()
    assert len(text) < before + 8 * 1024, len(text) - before
    assert not any(m in text for m in methods if len(m) > 8)
    assert 'method="other"' in text
    assert "seg" not in text
    assert_alive(hostile, http)
