"""Clients for the end-to-end tests: a raw HTTP client that sends exactly the given path and headers, a replay of
the iOS SDK's (push-notifications-swift 4.0.0) device requests, and hand-built JWTs.

Raw `http.client` is used instead of `requests` so that paths reach the server byte for byte, as the iOS SDK sends
them (it interpolates interest names and device ids into URLs without percent-encoding).
"""
import base64
import hashlib
import hmac
import http.client
import json
import ssl
import subprocess
import time
import uuid
from urllib.parse import urlsplit

from conftest import INSTANCE_ID, SECRET

IOS_HEADERS = {"Content-Type": "application/json", "X-Pusher-Library": "push-notifications-swift 4.0.0"}
BUNDLE_ID = "com.example.sdktest"


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-cased names
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


class HTTP:
    """Exact path and headers. With `keep_alive`, requests share one connection like URLSession's, and a new one is
    opened only after the server said `Connection: close` (never silently after an error)."""

    def __init__(self, server, keep_alive=False, source=None):
        """`source`: the local address to connect from (e.g. "127.0.0.2", another client as far as the server's
        per-address limits go; all of 127.0.0.0/8 is loopback)."""
        parts = urlsplit(server.base)
        self.host, self.port, self.tls = parts.hostname, parts.port, parts.scheme == "https"
        self.context = ssl.create_default_context(cafile=server.cert) if self.tls else None
        self.keep_alive = keep_alive
        self.source = (source, 0) if source else None
        self.conn = None
        self.connections = 0

    def _connect(self, timeout):
        self.connections += 1
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout,
                                               source_address=self.source)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout, source_address=self.source)

    def request(self, method, path, body=None, headers=None, timeout=30):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        conn = self.conn if self.keep_alive and self.conn else self._connect(timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            response = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        except BaseException:
            conn.close()
            self.conn = None
            raise
        if self.keep_alive and not r.will_close:
            self.conn = conn
        else:
            conn.close()
            self.conn = None
        return response

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None


def assert_error(response, status, description=None, contains=None):
    """A Beams error: `status`, a JSON object with both `error` and `description` as non-empty strings."""
    assert response.status == status, response
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    body = response.json()
    assert set(body) >= {"error", "description"}, body
    assert isinstance(body["error"], str) and body["error"], body
    assert isinstance(body["description"], str) and body["description"], body
    if description is not None:
        assert body["description"] == description, body
    if contains is not None:
        assert contains in body["description"], body
    return body


def assert_empty_ok(response):
    """Beams' answer to a mutation: 200, empty body, `Content-Length: 0`."""
    assert response.status == 200, response
    assert response.body == b"", response
    assert response.headers.get("content-length") == "0", response.headers


def random_token():
    """A 32-byte APNs token as the iOS SDK sends it: lower-case hex."""
    return uuid.uuid4().hex + uuid.uuid4().hex


def devices_path(instance=INSTANCE_ID):
    return f"/device_api/v1/instances/{instance}/devices/apns"


class IOSDevice:
    """What push-notifications-swift 4.0.0 sends, with the state it keeps in UserDefaults (docs/BEAMS-PROTOCOL.md §4)."""

    def __init__(self, http, token=None, instance=INSTANCE_ID):
        self.http = http
        self.instance = instance
        self.token = token or random_token()
        self.device_id = None
        self.interests = set()
        self.user_id = None
        self.metadata = {"sdkVersion": "4.0.0", "iosVersion": "17.0.1"}

    def call(self, method, suffix="", body=None, headers=None):
        path = devices_path(self.instance) + suffix
        return self.http.request(method, path, body, {**IOS_HEADERS, **(headers or {})})

    def device_call(self, method, suffix="", body=None, headers=None):
        return self.call(method, f"/{self.device_id}{suffix}", body, headers)

    # The SDK's jobs, one request each.

    def register(self):
        r = self.call("POST", body={"token": self.token, "bundleIdentifier": BUNDLE_ID, "metadata": self.metadata})
        assert r.status == 200, r
        body = r.json()
        assert isinstance(body["id"], str) and body["id"], body
        assert isinstance(body["initialInterestSet"], list), body
        self.device_id = body["id"]
        return body

    def subscribe(self, name):
        return self.device_call("POST", f"/interests/{name}")

    def unsubscribe(self, name):
        return self.device_call("DELETE", f"/interests/{name}")

    def set_interests(self, names):
        return self.device_call("PUT", "/interests", {"interests": sorted(names)})

    def sync_metadata(self, metadata):
        return self.device_call("PUT", "/metadata", metadata)

    def set_user(self, jwt):
        return self.device_call("PUT", "/user", headers={"Authorization": f"Bearer {jwt}"})

    def delete(self):
        return self.device_call("DELETE")

    # Reads the SDK never makes, used to check server state.

    def get(self):
        return self.device_call("GET")

    def server_interests(self):
        names, cursor = [], None
        while True:
            query = "" if cursor is None else f"?cursor={cursor}"
            r = self.device_call("GET", f"/interests{query}")
            assert r.status == 200, r
            body = r.json()
            names += body["interests"]
            cursor = body["responseMetadata"]["nextCursor"]
            if not cursor:
                return names


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_hs256(claims, secret=SECRET, header=None):
    header = header or {"alg": "HS256", "typ": "JWT"}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def beams_claims(user, instance=INSTANCE_ID, now=None, lifetime=86400, **overrides):
    """The claims every server SDK's generateToken writes (Node adds `iat`)."""
    now = int(time.time()) if now is None else now
    claims = {"sub": user, "iss": f"https://{instance}.pushnotifications.pusher.com", "exp": now + lifetime}
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def cli_token(server, user, ttl=None):
    """`push-server token`, the operator's way to mint a Beams token."""
    args = [server.binary, "token", "--config", str(server.config_path), "--instance", INSTANCE_ID, "--user", user]
    if ttl:
        args += ["--ttl", str(ttl)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def wait_for(predicate, timeout=15, interval=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
