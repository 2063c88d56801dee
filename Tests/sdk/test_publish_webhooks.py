"""Per-publish `webhookUrl`: STARTED and FINISHED bodies, basic-auth credentials from the URL, and retries."""
import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from beams import Beams, alert, random_token, unique, wait_for


class Receiver:
    """A local webhook receiver: records every POST; answers `fail_first` requests with 500, then 200."""

    def __init__(self, fail_first=0):
        self.received = []
        self.fail_first = fail_first
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.received.append({"path": self.path, "headers": dict(self.headers), "raw": body,
                                              "body": json.loads(body), "at": time.time()})
                    fail = receiver.fail_first > 0
                    if fail:
                        receiver.fail_first -= 1
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook", credentials=""):
        return f"http://{credentials}127.0.0.1:{self.port}{path}"

    def bodies(self, publish_id):
        with self.lock:
            return [r for r in self.received if r["body"].get("publishId") == publish_id]

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def receiver():
    receivers = []

    def make(fail_first=0):
        r = Receiver(fail_first)
        receivers.append(r)
        return r

    yield make
    for r in receivers:
        r.close()


@pytest.fixture(scope="module")
def beams(env):
    server, mock = env
    return Beams(server), mock


def test_started_and_finished_reach_the_webhook_url_with_counts(beams, receiver):
    client, mock = beams
    hook = receiver()
    interest, tokens = unique("hook"), [random_token() for _ in range(3)]
    for token in tokens:
        client.register(token, [interest])
    mock.behave(tokens[2], status=400, reason="DeviceTokenNotForTopic")
    request_body = {"interests": [interest], "webhookUrl": hook.url(), "apns": alert("hooked")}
    publish_id = client.publish("interests", request_body)
    client.wait_finished(publish_id)
    got = wait_for(lambda: (lambda b: b if len(b) >= 2 else None)(hook.bodies(publish_id)), timeout=10)
    assert [r["body"]["status"] for r in got] == ["STARTED", "FINISHED"], got
    started, finished = got[0], got[1]
    assert started["path"] == "/hook"
    assert started["headers"]["Content-Type"] == "application/json"
    assert started["body"] == {"publishId": publish_id, "status": "STARTED", "requestBody": request_body}
    assert finished["body"]["requestBody"] == request_body
    assert finished["body"]["results"] == {
        "apns": {"numSuccessfulPublishes": 2, "numFailedPublishes": 1}, "failed": False}


def test_webhook_url_credentials_are_sent_as_basic_auth(beams, receiver):
    client, _ = beams
    hook = receiver()
    publish_id = client.publish("interests", {"interests": [unique("auth")], "apns": alert(),
                                              "webhookUrl": hook.url(credentials="hookuser:s3cret@")})
    got = wait_for(lambda: (lambda b: b if len(b) >= 2 else None)(hook.bodies(publish_id)), timeout=10)
    expected = "Basic " + base64.b64encode(b"hookuser:s3cret").decode()
    assert all(r["headers"].get("Authorization") == expected for r in got), [r["headers"] for r in got]


def test_failing_receiver_gets_a_retry_after_ten_seconds(beams, receiver):
    client, _ = beams
    hook = receiver(fail_first=1)
    publish_id = client.publish("interests", {"interests": [unique("retry")], "apns": alert(),
                                              "webhookUrl": hook.url()})
    # Beams' schedule: the first retry comes 10 s after the failure (docs/beams-api.md §10).
    got = wait_for(lambda: (lambda b: b if len(b) >= 3 else None)(hook.bodies(publish_id)), timeout=25)
    statuses = [r["body"]["status"] for r in got]
    assert statuses.count("STARTED") == 2 and statuses.count("FINISHED") == 1, statuses
    first, retried = [r for r in got if r["body"]["status"] == "STARTED"]
    assert first["body"] == retried["body"]
    assert 9.0 <= retried["at"] - first["at"] <= 20.0, retried["at"] - first["at"]


def test_users_publish_sends_a_signed_publish_to_users_attempt(environment, receiver):
    hook = receiver()
    mock = environment.mock()
    server = environment.server(mock, instance_overrides={"webhook": {"url": hook.url("/instance"),
                                                                      "secret": "whsec-123"}}, name="hooked")
    client = Beams(server)
    delivered, failed, nobody = unique("ok"), unique("bad"), unique("none")
    good, gone, bad = random_token(), random_token(), random_token()
    client.register(good, user=delivered)
    client.register(gone, user=delivered)
    client.register(bad, user=failed, environment="sandbox")
    mock.behave(gone, status=410, reason="Unregistered")
    mock.behave(bad, status=400, reason="BadDeviceToken")
    publish_id = client.publish("users", {"users": [delivered, failed, nobody], "apns": alert()})
    client.wait_finished(publish_id)
    events = wait_for(lambda: [r for r in hook.received if r["path"] == "/instance"], timeout=10)
    assert len(events) == 1, events
    event = events[0]
    assert event["headers"]["Webhook-Event-Type"] == "v1.PublishToUsersAttempt"
    assert event["headers"]["User-Agent"] == "pusher-webhooks"
    expected = hmac.new(b"whsec-123", event["raw"], hashlib.sha1).hexdigest()
    assert event["headers"]["Webhook-Signature"] == expected
    assert event["body"]["metadata"]["event_type"] == "v1.PublishToUsersAttempt"
    assert event["body"]["payload"] == {
        "instance_id": client.instance_id, "publish_id": publish_id,
        "users_delivered_to_gateway": [delivered], "users_no_devices": [nobody], "users_gateway_failed": [failed],
    }, event["body"]
