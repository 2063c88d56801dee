"""Webhooks towards untrusted URLs: the destination policy (after DNS, no traffic to refused addresses), no
redirects, the time limit, the response size cap, and retries on the outbox schedule, against real local receivers.

Refused destinations other than loopback (169.254.169.254, 10.x) are literal addresses on the discard port: the
server refuses them before opening a socket, so no test traffic leaves this host.
"""
import hashlib
import hmac
import re

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from receiver import Receiver


@pytest.fixture
def receiver():
    receivers = []

    def make(**options):
        r = Receiver(**options)
        receivers.append(r)
        return r

    yield make
    for r in receivers:
        r.close()


def failures(server, reason):
    """push_webhook_failures_total{reason=…} as the server reports it."""
    text = requests.get(server.url("/metrics"), verify=server.cert, timeout=5).text
    match = re.search(r'^push_webhook_failures_total\{reason="%s"\} (\S+)$' % reason, text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def wait_failures(server, reason, at_least, timeout=15):
    return wait_for(lambda: failures(server, reason) >= at_least, timeout=timeout,
                    message=f"{reason} failures did not reach {at_least}")


@pytest.fixture(scope="module")
def strict(environment):
    """A server with the default policy: no allowed destinations at all."""
    server = environment.server(environment.mock(), {"webhooks": {}}, name="strict")
    return Beams(server)


@pytest.fixture(scope="module")
def tight(environment):
    """127.0.0.1 allowed, with a 2 s time limit and a 4 KiB response cap."""
    server = environment.server(environment.mock(), {"webhooks": {
        "allowedDestinations": ["127.0.0.1"], "timeoutSeconds": 2, "connectTimeoutSeconds": 1,
        "maxResponseBytes": 4096}}, name="tight")
    return Beams(server)


def test_refused_destinations_get_no_traffic_and_fail_with_the_reason(strict, receiver):
    v4, v6 = receiver(), receiver(host="::1")
    urls = {
        "loopback": v4.url(credentials="hookuser:s3cret@"),
        "IPv6 loopback": v6.url(),
        "a name resolving to loopback": f"http://localhost:{v4.port}/hook",
        "IPv4-mapped loopback": f"http://[::ffff:127.0.0.1]:{v4.port}/hook",
        "metadata": "http://169.254.169.254:9/latest/meta-data/",
        "private": "http://10.255.255.1:9/hook",
    }
    before = failures(strict.server, "refused_destination")
    for url in urls.values():
        strict.wait_finished(strict.publish("interests", {"interests": [unique("refused")], "apns": alert(),
                                                          "webhookUrl": url}))
    # STARTED and FINISHED for each publish: every attempt refused.
    wait_failures(strict.server, "refused_destination", before + 2 * len(urls))
    assert v4.received == [] and v6.received == []
    expected = ["127.0.0.1 is loopback", "::1 is loopback", "169.254.169.254 is link-local", "10.255.255.1 is private"]

    def refusals(log):
        return [line for line in log.splitlines() if "Webhook destination refused" in line]

    # The metric can be seen before the log's own writer thread has written the lines.
    log = strict.server.wait_logged(lambda log: all(any(e in line for line in refusals(log)) for e in expected))
    assert "s3cret" not in log and "hookuser" not in log, "credentials of a webhookUrl must never be logged"


def test_allow_listed_host_gets_webhooks_signed_with_the_secret_from_a_file(environment, receiver, tmp_path):
    hook = receiver()
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_text("whsec-from-file-0123456789\n")
    server = environment.server(
        environment.mock(), {"webhooks": {"allowedDestinations": ["localhost"]}},
        instance_overrides={"webhook": {"url": f"http://localhost:{hook.port}/instance",
                                        "secretFile": str(secret_file)}}, name="host-allowed")
    client = Beams(server)
    user = unique("u")
    client.register(random_token(), user=user)
    publish_id = client.publish("users", {"users": [user], "apns": alert(),
                                          "webhookUrl": f"http://LOCALHOST:{hook.port}/publish"})
    client.wait_finished(publish_id)
    got = wait_for(lambda: (lambda r: r if len(r) >= 3 else None)(list(hook.received)), timeout=10)
    assert sorted(r["path"] for r in got) == ["/instance", "/publish", "/publish"]
    event = next(r for r in got if r["path"] == "/instance")
    assert event["headers"]["Webhook-Signature"] == hmac.new(
        b"whsec-from-file-0123456789", event["raw"], hashlib.sha1).hexdigest()
    assert event["body"]["payload"]["publish_id"] == publish_id
    assert failures(server, "refused_destination") == 0


def test_redirect_is_not_followed(tight, receiver):
    target = receiver()
    redirecting = receiver(redirect_to=target.url("/stolen"))
    before = failures(tight.server, "http_status")
    publish_id = tight.publish("interests", {"interests": [unique("redirect")], "apns": alert(),
                                             "webhookUrl": redirecting.url()})
    tight.wait_finished(publish_id)
    wait_failures(tight.server, "http_status", before + 2)
    assert [r["body"]["status"] for r in redirecting.bodies(publish_id)] == ["STARTED", "FINISHED"]
    assert target.received == []
    tight.server.wait_logged("answered HTTP 302 (redirects are not followed)")


def test_slow_receiver_is_cut_at_the_time_limit_and_retried_on_schedule(tight, receiver):
    hook = receiver(hold_first=1)
    before = failures(tight.server, "timeout")
    publish_id = tight.publish("interests", {"interests": [unique("slow")], "apns": alert(),
                                             "webhookUrl": hook.url()})
    # STARTED is held until the 2 s limit cuts it; FINISHED follows; STARTED comes back 10 s after the failure.
    got = wait_for(lambda: (lambda b: b if len(b) >= 3 else None)(hook.bodies(publish_id)), timeout=30)
    held, retried = got[0], [r for r in got[1:] if r["body"]["status"] == "STARTED"][0]
    assert held["body"]["status"] == "STARTED" and held["closed_at"] is not None
    assert 1.5 <= held["closed_at"] - held["at"] <= 4.0, held["closed_at"] - held["at"]
    assert failures(tight.server, "timeout") == before + 1
    assert 9.0 <= retried["at"] - held["closed_at"] <= 20.0, retried["at"] - held["closed_at"]
    assert retried["body"] == held["body"]
    assert sorted(r["body"]["status"] for r in got) == ["FINISHED", "STARTED", "STARTED"]


def test_endless_response_is_cut_at_the_size_cap(tight, receiver):
    hook = receiver(endless=True)
    before, timeouts = failures(tight.server, "response_too_large"), failures(tight.server, "timeout")
    publish_id = tight.publish("interests", {"interests": [unique("endless")], "apns": alert(),
                                             "webhookUrl": hook.url()})
    wait_failures(tight.server, "response_too_large", before + 1)
    first = hook.bodies(publish_id)[0]
    wait_for(lambda: first["closed_at"], timeout=10, message="the server kept reading")
    # Cut by size at once, not by the 2 s time limit.
    assert first["closed_at"] - first["at"] < 1.5, first["closed_at"] - first["at"]
    assert failures(tight.server, "timeout") == timeouts
    tight.server.wait_logged("response larger than 4096 bytes")


@pytest.mark.parametrize("url,description", [
    ("ftp://hooks.example.com/x", "`webhookUrl`: Only http and https webhook URLs are supported"),
    ("gopher://127.0.0.1:6379/_FLUSHALL", "`webhookUrl`: Only http and https webhook URLs are supported"),
    ("file:///etc/passwd", "`webhookUrl`: Only http and https webhook URLs are supported"),
    ("hooks.example.com/beams", "`webhookUrl`: Does not match format 'uri'"),
    ("http://exa mple.com/", "`webhookUrl`: Does not match format 'uri'"),
    ("http://hooks.example.com:99999/", "`webhookUrl`: Does not match format 'uri'"),
])
def test_bad_webhook_url_is_rejected_at_publish_time(tight, url, description):
    response = tight.publish_raw("/interests", {"interests": [unique("bad")], "apns": alert(), "webhookUrl": url})
    assert response.status_code == 422, response.text
    assert response.json() == {"error": "Unprocessable Entity", "description": description}, response.json()
