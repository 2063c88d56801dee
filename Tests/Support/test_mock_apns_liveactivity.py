"""The strict mock's Live Activity rules (apns_rules.check_live_activity_payload): pure checks, and the same rules
over TLS + HTTP/2 through the running mock."""
from __future__ import annotations

import copy
import json

import pytest

import apns_rules
from mock_apns_testkit import TOPIC, sign_jwt
from mock_apns_testkit import _reset, client, keys, mock  # noqa: F401  (fixtures)

TOKEN = "cd" * 32
LA_TOPIC = TOPIC + ".push-type.liveactivity"
START = {"aps": {"event": "start", "timestamp": 1790000000, "attributes-type": "Match", "attributes": {"id": "m1"},
                 "content-state": {"score": "0:0"}, "alert": {"title": "Kick-off"}}}
UPDATE = {"aps": {"event": "update", "timestamp": 1790000000, "content-state": {"score": "1:0"}}}
END = {"aps": {"event": "end", "timestamp": 1790000000, "dismissal-date": 0}}


def _with(base: dict, **aps_changes) -> dict:
    payload = copy.deepcopy(base)
    for key, value in aps_changes.items():
        key = key.replace("_", "-")
        if value is None:
            payload["aps"].pop(key, None)
        else:
            payload["aps"][key] = value
    return payload


@pytest.mark.parametrize("payload", [START, UPDATE, END, _with(END, content_state={"score": "2:1"})])
def test_valid_live_activity_payloads_pass(payload):
    assert apns_rules.check_live_activity_payload(5, payload["aps"]).ok
    assert apns_rules.check_live_activity_payload(10, payload["aps"]).ok


@pytest.mark.parametrize("payload", [
    _with(UPDATE, event=None),
    _with(UPDATE, event="pause"),
    _with(UPDATE, timestamp=None),
    _with(UPDATE, timestamp="1790000000"),
    _with(UPDATE, timestamp=True),
    _with(UPDATE, content_state=None),
    _with(UPDATE, content_state=[1]),
    _with(START, attributes_type=None),
    _with(START, attributes=None),
    _with(START, attributes="m1"),
    _with(START, alert=None),
    _with(UPDATE, dismissal_date=0),
    _with(END, dismissal_date="now"),
    _with(UPDATE, stale_date=1.5),
])
def test_live_activity_payload_rule_violations_are_bad_payload(payload):
    verdict = apns_rules.check_live_activity_payload(5, payload["aps"])
    assert (verdict.status, verdict.reason) == (400, "BadPayload")


def test_live_activity_priority_1_is_bad_priority():
    verdict = apns_rules.check_live_activity_payload(1, UPDATE["aps"])
    assert (verdict.status, verdict.reason) == (400, "BadPriority")


def test_live_activity_push_over_the_wire_is_accepted_with_its_topic(mock, client, keys):
    r = client().request(TOKEN, sign_jwt(keys.key1), payload=START, topic=LA_TOPIC, push_type="liveactivity",
                         priority="5")
    assert r.status == 200, r.body
    [rec] = mock.requests(TOKEN)
    assert rec["payload"] == START and rec["headers"]["apns-push-type"] == "liveactivity"


@pytest.mark.parametrize("topic,payload,priority,status,reason", [
    (TOPIC, UPDATE, "5", 400, "DeviceTokenNotForTopic"),
    (LA_TOPIC, _with(UPDATE, event=None), "5", 400, "BadPayload"),
    (LA_TOPIC, _with(START, alert=None), "10", 400, "BadPayload"),
    (LA_TOPIC, UPDATE, "1", 400, "BadPriority"),
    (LA_TOPIC, _with(UPDATE, content_state={"pad": "x" * 4096}), "5", 413, "PayloadTooLarge"),
])
def test_live_activity_push_over_the_wire_is_refused(client, keys, topic, payload, priority, status, reason):
    r = client().request(TOKEN, sign_jwt(keys.key1), body=json.dumps(payload).encode(), topic=topic,
                         push_type="liveactivity", priority=priority)
    assert (r.status, r.reason) == (status, reason)
