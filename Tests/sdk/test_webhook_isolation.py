"""One instance's hanging webhook receiver does not delay another instance's webhooks.

Ten publishes of instance A whose `webhookUrl` accepts and never answers queue twenty webhooks to one URL. The
outbox used to claim sixteen at a time, send same-URL webhooks one after the other (3 s timeout each) and wait for
the whole batch before claiming again, so instance B's signed webhook waited ~50 s. Now attempts are claimed
continuously, one destination gets at most `webhooks.maxConcurrentPerDestination` of them, instances take turns,
and the hanging destination's breaker opens after three timeouts in a row (docs/SECURITY.md, "Slow
destinations"): B's webhook goes out at once.
"""
import hashlib
import hmac
import time

import pytest

from beams import Beams, alert, unique, wait_for
from harness import Mock, Server, write_apns_key
from receiver import Receiver

B_ID = "3c9a7e51-0b2d-4f6e-8a1c-5d7e9f0a2b4c"
B_SECRET = "instance-b-secret-0123456789abcdef"


@pytest.fixture
def two_instances(tmp_path):
    hanging, answering = Receiver(hold_first=1000), Receiver()
    p8, pub = write_apns_key(tmp_path)
    mock = Mock(tmp_path, pub)
    server = None
    try:
        server = Server(tmp_path, mock, p8, extra_instances=[{
            "id": B_ID, "secretKey": B_SECRET, "webhook": {"url": answering.url("/b"), "secret": "whsec-b"}}])
        yield server, hanging, answering
    finally:
        if server is not None:
            server.kill9()  # nothing to check in the shutdown; a graceful stop would wait for the held attempts
        mock.stop()
        hanging.close()
        answering.close()


def test_a_hanging_webhook_url_of_one_instance_does_not_delay_another_instances_signed_webhook(two_instances):
    server, hanging, answering = two_instances
    a = Beams(server)
    for _ in range(10):
        a.publish("interests", {"interests": [unique("nobody")], "webhookUrl": hanging.url(), "apns": alert()})
    wait_for(lambda: hanging.received, timeout=20, message="instance A's webhooks never reached the receiver")

    b = Beams(server, instance_id=B_ID, secret=B_SECRET)
    started = time.monotonic()
    publish_id = b.publish("users", {"users": [unique("user")], "apns": alert()})
    events = wait_for(lambda: answering.received, timeout=30, interval=0.1,
                      message="instance B's webhook never arrived")
    # Generous on a loaded machine: it waited ~50 s behind A's before, and takes milliseconds now.
    assert time.monotonic() - started < 10
    event = events[0]
    assert event["body"]["payload"]["publish_id"] == publish_id
    assert event["headers"]["Webhook-Signature"] == hmac.new(b"whsec-b", event["raw"], hashlib.sha1).hexdigest()
    assert not any(name.startswith(":") for name in event["headers"]), "the stored instance entry is not sent"
