"""Fan-out mechanics end to end: target pages with skipped (invalid) devices, concurrent publishes, the exact
payload size limit."""
import json

import pytest

from beams import Beams, random_token, unique


@pytest.fixture(scope="module")
def paged(environment):
    """A server reading targets 10 per page (the smallest page the config allows)."""
    mock = environment.mock()
    server = environment.server(mock, {"engine": {"pageSize": 10}}, name="paged")
    return Beams(server), mock


def test_overlapping_interests_across_pages_with_invalid_devices_reach_each_valid_device_once(paged):
    client, mock = paged
    a, b, c = unique("pa"), unique("pb"), unique("pc")
    devices = []
    for n in range(95):
        interests = [i for i, every in ((a, 2), (b, 3), (c, 5)) if n % every == 0] or [a]
        token = random_token()
        devices.append((token, client.register(token, interests)))
    # Every seventh device is invalidated first (410 after its registration), so pages contain gaps.
    invalid = {token for n, (token, _) in enumerate(devices) if n % 7 == 3}
    for token in invalid:
        mock.behave(token, status=410, reason="Unregistered", times=1)
    first = client.wait_finished(client.publish("interests", {"interests": [a, b, c], "apns": {"aps": {"alert": "1"}}}))
    assert first["targets"] == 95 and first["devicesRemoved"] == len(invalid), first

    second_id = client.publish("interests", {"interests": [c, b, a], "apns": {"aps": {"alert": "2"}}})
    second = client.wait_finished(second_id)
    assert second["targets"] == 95 - len(invalid), second
    assert second["apns"]["accepted"] == 95 - len(invalid)
    for token, _ in devices:
        got = [r for r in mock.requests_for(token) if r["payload"]["data"]["pusher"]["publishId"] == second_id]
        assert len(got) == (0 if token in invalid else 1), (token, got)


def test_concurrent_publishes_each_reach_every_device_once(paged):
    client, mock = paged
    interest = unique("conc")
    tokens = client.register_devices(40, [interest])
    ids = [client.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": str(n)}}})
           for n in range(8)]
    for publish_id in ids:
        assert client.wait_finished(publish_id)["apns"]["accepted"] == 40
    for token in tokens:
        seen = sorted(r["payload"]["data"]["pusher"]["publishId"] for r in mock.requests_for(token))
        assert seen == sorted(ids), token


def test_payload_limit_is_exactly_4096_bytes(env):
    server, mock = env
    client = Beams(server)
    interest, token = unique("size"), random_token()
    client.register(token, [interest])

    def send(pad):
        publish_id = client.publish("interests", {"interests": [interest],
                                                  "apns": {"aps": {"alert": "x"}, "data": {"p": "p" * pad}}})
        return client.wait_finished(publish_id)

    send(0)
    base = mock.requests_for(token)[-1]["payload_size"]
    at_limit = send(4096 - base)
    assert at_limit["apns"]["accepted"] == 1, at_limit
    assert mock.requests_for(token)[-1]["payload_size"] == 4096
    over = send(4097 - base)
    assert over["apns"]["failedByReason"] == {"PayloadTooLarge": 1}, over
    assert len(mock.requests_for(token)) == 2
    # Bytes count, not characters: 2-byte characters that stay far below 4096 characters are still refused
    # locally (the mock sees nothing new).
    chars = (4096 - base) // 2 + 1
    body = {"interests": [interest], "apns": {"aps": {"alert": "x"}, "data": {"p": "\u00e9" * chars}}}
    response = client.publish_raw("/interests", data=json.dumps(body, ensure_ascii=False).encode())
    assert response.status_code == 200, response.text
    multibyte = client.wait_finished(response.json()["publishId"])
    assert multibyte["apns"]["failedByReason"] == {"PayloadTooLarge": 1}, multibyte
    assert len(mock.requests_for(token)) == 2
