"""The strict OTLP receiver refuses what breaks the OTLP JSON mapping and accepts what follows it, over a real
socket: so a sender bug (base64 ids, numeric nanos, enum names, no resource) fails the end-to-end tests."""
import copy
import json

import pytest
import requests

from mock_otlp import OTLPReceiver

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
VALID = {"resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "push-server"}}]},
    "scopeSpans": [{"scope": {"name": "push-server", "version": "1"}, "spans": [{
        "traceId": TRACE, "spanId": "00f067aa0ba902b7", "parentSpanId": "00f067aa0ba902b8", "flags": 257,
        "name": "POST /x", "kind": 2, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000000000001",
        "attributes": [{"key": "n", "value": {"intValue": "3"}}], "status": {"code": 0},
        "events": [{"name": "e", "timeUnixNano": "1700000000000000000", "attributes": []}],
    }]}],
}]}


@pytest.fixture
def receiver():
    receiver = OTLPReceiver().start()
    yield receiver
    receiver.stop()


def post(receiver, body, content_type="application/json"):
    return requests.post(receiver.url, data=json.dumps(body), headers={"Content-Type": content_type}, timeout=5)


def mutated(change):
    body = copy.deepcopy(VALID)
    change(body, body["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
    return body


def test_a_valid_request_is_accepted_and_its_spans_kept(receiver):
    r = post(receiver, VALID)
    assert r.status_code == 200 and r.json() == {} and r.headers["Content-Type"] == "application/json"
    [span] = receiver.trace(TRACE)
    assert span["attrs"] == {"n": "3"} and span["resource"]["service.name"] == "push-server"


@pytest.mark.parametrize("change, rule", [
    (lambda b, s: s.update(traceId="S/kvNXezTaajzpKdDg5HNg=="), "traceId"),       # base64, not hex
    (lambda b, s: s.update(spanId="00f067aa0ba902"), "spanId"),                   # wrong length
    (lambda b, s: s.update(traceId="0" * 32), "all-zero"),
    (lambda b, s: s.update(parentSpanId="0" * 16), "all-zero"),
    (lambda b, s: s.update(startTimeUnixNano=1700000000000000000), "startTimeUnixNano"),  # a number, not a string
    (lambda b, s: s.update(kind="SPAN_KIND_SERVER"), "kind"),                     # enum name
    (lambda b, s: s.update(status={"code": "STATUS_CODE_ERROR"}), "status.code"),
    (lambda b, s: s["attributes"][0].update(value={"intValue": 3}), "intValue"),
    (lambda b, s: s.update(spanID="00f067aa0ba902b7"), "unknown field"),          # wrong case of a key
    (lambda b, s: b["resourceSpans"][0].pop("resource"), "resource"),
    (lambda b, s: b["resourceSpans"][0]["resource"].update(attributes=[]), "service.name"),
    (lambda b, s: b["resourceSpans"][0]["scopeSpans"][0].pop("scope"), "scope"),
    (lambda b, s: s.update(endTimeUnixNano="1600000000000000000"), "ends before"),
])
def test_a_request_breaking_the_mapping_is_refused_naming_the_rule(receiver, change, rule):
    r = post(receiver, mutated(change))
    assert r.status_code == 400, r.text
    assert rule in r.json()["message"] and receiver.violations and not receiver.spans()


def test_wrong_content_type_and_empty_envelopes_are_refused(receiver):
    assert post(receiver, VALID, content_type="application/x-protobuf").status_code == 400
    assert post(receiver, {"resourceSpans": []}).status_code == 400
    assert len(receiver.violations) == 2


def test_scripted_answers_come_first_with_retry_after(receiver):
    receiver.script(503, retry_after=1, times=2)
    first = post(receiver, VALID)
    assert first.status_code == 503 and first.headers["Retry-After"] == "1"
    assert post(receiver, VALID).status_code == 503
    assert post(receiver, VALID).status_code == 200
    assert [request["status"] for request in receiver.requests] == [503, 503, 200]
