"""OpenTelemetry traces (docs/OPERATIONS.md, "Traces") against the strict OTLP receiver (Tests/Support/mock_otlp.py),
which refuses anything off the OTLP JSON mapping: a publish sent with a `traceparent` gives one trace with the
request's SERVER span, the commit, the run's CONSUMER span and per-platform batch spans with the expected parents,
and the webhook receiver gets a `traceparent` of that trace; a 503 with `Retry-After` from the receiver is
retried; with two nodes on PostgreSQL splitting a publish into shards, both nodes' spans share the trace id."""
import os
import sys
import time
import uuid

import pytest
import requests

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, ROOT
from receiver import Receiver

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
from mock_otlp import OTLPReceiver  # noqa: E402
import postgresql_cluster  # noqa: E402

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SERVER, CLIENT, CONSUMER, INTERNAL = 2, 3, 5, 1


def traceparent(parent_id, trace_id=TRACE_ID):
    return f"00-{trace_id}-{parent_id}-01"


def tracing(receiver):
    # Exports every 100 ms instead of 5 s, so a test waits for spans briefly; every other setting is the default.
    return {"tracing": {"enabled": True, "endpoint": receiver.url, "scheduleDelayMillis": 100}}


@pytest.fixture(scope="module")
def otlp():
    receiver = OTLPReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def traced(environment, otlp):
    mock = environment.mock()
    return environment.server(mock, tracing(otlp), name="traced"), mock


@pytest.fixture
def hook():
    receiver = Receiver()
    yield receiver
    receiver.close()


def spans_named(otlp, trace_id, name):
    return [span for span in otlp.trace(trace_id) if span["name"] == name]


def metrics_text(server):
    return requests.get(server.url("/metrics"), verify=server.cert, timeout=10).text


def test_a_publish_with_a_traceparent_gives_one_trace_with_the_expected_spans_and_parents(traced, otlp, hook):
    server, _ = traced
    beams = Beams(server)
    interest = unique("traced")
    tokens = beams.register_devices(3, [interest])
    trace_id, caller_span = uuid.uuid4().hex, "00f067aa0ba902b7"
    r = beams.publish_raw("/interests", {"interests": [interest], "webhookUrl": hook.url(), "apns": alert("traced")},
                          headers={"traceparent": traceparent(caller_span, trace_id), "tracestate": "vendor=abc"})
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    assert beams.wait_finished(publish_id)["status"] == "finished"
    wait_for(lambda: len(hook.bodies(publish_id)) == 2, message="STARTED and FINISHED never arrived")
    # Spans leave in batches as they end (the request's first, the webhooks' last): wait for every one expected.
    def complete():
        return (len(spans_named(otlp, trace_id, "POST")) == 2
                and sum(int(batch["attrs"]["messaging.batch.message_count"])
                        for batch in spans_named(otlp, trace_id, "send apns")) == 3
                and all(spans_named(otlp, trace_id, name) for name in (
                    "POST /publish_api/v1/instances/{instance}/publishes/interests", "publish commit",
                    "process publish")))

    # An eventual condition (batches leave every 5 s, and make test runs its tiers side by side), so a generous
    # wait; when it fails, what did arrive is in the message.
    try:
        wait_for(complete, timeout=45)
    except AssertionError:
        seen = [(span["name"], span["attrs"].get("messaging.batch.message_count")) for span in otlp.trace(trace_id)]
        raise AssertionError(f"the trace's spans never reached the receiver; of this trace it has {seen}, "
                             f"in {len(otlp.requests)} export requests; violations {otlp.violations}") from None

    [request] = spans_named(otlp, trace_id, "POST /publish_api/v1/instances/{instance}/publishes/interests")
    assert request["kind"] == SERVER and request["parentSpanId"] == caller_span, request
    assert request["traceState"] == "vendor=abc"
    assert request["flags"] & 0x301 == 0x301, "sampled, with a remote parent"
    assert request["attrs"]["beams.publish_id"] == publish_id and request["attrs"]["http.response.status_code"] == "200"
    assert request["attrs"]["http.route"] == "/publish_api/v1/instances/{instance}/publishes/interests"
    [commit] = spans_named(otlp, trace_id, "publish commit")
    assert commit["kind"] == INTERNAL and commit["parentSpanId"] == request["spanId"]
    [run] = spans_named(otlp, trace_id, "process publish")
    assert run["kind"] == CONSUMER and run["parentSpanId"] == request["spanId"], run
    assert run["attrs"]["beams.publish_id"] == publish_id and run["attrs"]["push.run.outcome"] == "finished"
    batches = spans_named(otlp, trace_id, "send apns")
    assert all(batch["kind"] == CLIENT and batch["parentSpanId"] == run["spanId"] for batch in batches)
    assert sum(int(batch["attrs"]["messaging.batch.message_count"]) for batch in batches) == 3
    assert sum(int(batch["attrs"]["push.accepted"]) for batch in batches) == 3
    outcomes = [event for batch in batches for event in batch["events"]]
    assert {(e["name"], e["attributes"][0]["value"]["intValue"]) for e in outcomes} == {("outcome", "200")}

    # Both webhooks are CLIENT spans under the run, and each POST carried its own span as the parent.
    webhook_spans = spans_named(otlp, trace_id, "POST")
    assert all(span["kind"] == CLIENT and span["parentSpanId"] == run["spanId"] for span in webhook_spans)
    received = {record["headers"]["traceparent"] for record in hook.bodies(publish_id)}
    assert received == {traceparent(span["spanId"], trace_id) for span in webhook_spans}, received
    assert {record["headers"].get("tracestate") for record in hook.bodies(publish_id)} == {"vendor=abc"}

    # One resource: the service, its version and this node; one scope.
    assert run["resource"]["service.name"] == "push-server" and run["resource"]["service.instance.id"]
    assert run["scope"]["name"] == "push-server"
    assert not otlp.violations, otlp.violations
    assert all(request["headers"]["content-type"] == "application/json" for request in otlp.requests)


def test_a_publish_without_traceparent_starts_a_new_trace_and_a_malformed_one_is_ignored(traced, otlp):
    server, _ = traced
    beams = Beams(server)
    interest = unique("root")
    beams.register(random_token(), interests=[interest])
    r = beams.publish_raw("/interests", {"interests": [interest], "apns": alert("root")},
                          headers={"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"})
    assert r.status_code == 200, r.text
    publish_id = r.json()["publishId"]
    beams.wait_finished(publish_id)

    def request_span():
        found = [span for span in otlp.spans() if span["attrs"].get("beams.publish_id") == publish_id
                 and span["kind"] == SERVER]
        return found[0] if found else None

    span = wait_for(request_span, timeout=20, message="no request span for the publish")
    assert "parentSpanId" not in span and span["traceId"] != "0" * 32
    run = wait_for(lambda: spans_named(otlp, span["traceId"], "process publish"), timeout=20)
    assert run[0]["parentSpanId"] == span["spanId"]


def test_the_exporter_retries_a_503_after_its_retry_after_and_counts_it(traced, otlp):
    server, _ = traced
    beams = Beams(server)
    wait_for(lambda: time.time() - max([r["at"] for r in otlp.requests] or [0]) > 0.5, timeout=20,
             message="the exporter never went quiet")
    before = len(otlp.requests)
    otlp.script(503, retry_after=1)
    interest = unique("retry")
    beams.register(random_token(), interests=[interest])
    trace_id = uuid.uuid4().hex
    r = beams.publish_raw("/interests", {"interests": [interest], "apns": alert("retry")},
                          headers={"traceparent": traceparent("00f067aa0ba902b7", trace_id)})
    assert r.status_code == 200
    wait_for(lambda: spans_named(otlp, trace_id, "process publish"), timeout=30, message="the spans were never retried")
    attempts = otlp.requests[before:]
    assert attempts[0]["status"] == 503 and attempts[1]["status"] == 200, attempts
    assert attempts[1]["at"] - attempts[0]["at"] >= 0.95, "Retry-After: 1 was not honoured"
    text = metrics_text(server)
    assert 'push_otlp_export_retries_total{reason="http_503"} 1' in text, [l for l in text.splitlines() if "otlp" in l]
    assert 'push_otlp_spans_dropped_total{' not in text, "a retried export drops nothing"


def test_spans_still_queued_at_shutdown_are_exported_before_the_process_exits(environment, otlp):
    mock = environment.mock()
    # A schedule far longer than the test: only the flush at shutdown can send these spans.
    server = environment.server(mock, {"tracing": {"enabled": True, "endpoint": otlp.url,
                                                   "scheduleDelayMillis": 600000}}, name="flushed")
    beams = Beams(server)
    interest = unique("flush")
    beams.register(random_token(), interests=[interest])
    trace_id = uuid.uuid4().hex
    r = beams.publish_raw("/interests", {"interests": [interest], "apns": alert("flush")},
                          headers={"traceparent": traceparent("00f067aa0ba902b7", trace_id)})
    assert r.status_code == 200
    beams.wait_finished(r.json()["publishId"])
    time.sleep(0.5)
    assert not otlp.trace(trace_id), "exported before the schedule: the test proves nothing"
    assert server.stop() == 0
    names = {span["name"] for span in otlp.trace(trace_id)}
    assert {"process publish", "send apns", "publish commit"} <= names, names


SHARD_DEVICES, SHARD_SIZE = 1200, 100


@pytest.mark.skipif(not postgresql_cluster.installed() and os.environ.get("CI") != "true",
                    reason="PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure")
def test_shards_delivered_by_two_nodes_on_postgresql_continue_one_trace(environment, otlp):
    storage = postgresql_cluster.storage_section("tracing", shardSize=SHARD_SIZE)
    mock = environment.mock()
    # Two publish slots per node: neither node can claim every shard before the other wakes.
    overrides = {"storage": storage, "engine": {"concurrentPublishes": 2}, "limits": LOAD_TEST_LIMITS, **tracing(otlp)}
    node_a = environment.server(mock, overrides, name="trace-node-a")
    node_b = environment.server(mock, overrides, name="trace-node-b")
    interest = unique("shards")
    register_devices(node_a, INSTANCE_ID, [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(SHARD_DEVICES)], interest,
                     concurrency=32)
    mock.configure(record=False, delay_ms=20)
    trace_id, caller_span = uuid.uuid4().hex, "00f067aa0ba902b7"
    r = Beams(node_b).publish_raw("/interests", {"interests": [interest], "apns": alert("shards")},
                                  headers={"traceparent": traceparent(caller_span, trace_id)})
    assert r.status_code == 200, r.text
    status = Beams(node_a).wait_finished(r.json()["publishId"], timeout=120)
    assert status["status"] == "finished" and status["apns"]["accepted"] == SHARD_DEVICES, status

    def sent_in_batches():
        return sum(int(batch["attrs"]["messaging.batch.message_count"])
                   for batch in spans_named(otlp, trace_id, "send apns"))

    # Every span the checks below read: each node exports what has ended in batches on its own schedule
    # (BatchSpanProcessor), and a shard's span and its batch spans end at different moments (the runner ends the
    # batch spans with the run, on another thread), so they can leave in different exports: the shards' spans
    # arriving says nothing about the batches' (one run saw 1,116 of 1,200 messages counted).
    def exported():
        found = spans_named(otlp, trace_id, "process publish shard")
        return (len(found) >= SHARD_DEVICES // SHARD_SIZE and sent_in_batches() >= SHARD_DEVICES
                and spans_named(otlp, trace_id, "POST /publish_api/v1/instances/{instance}/publishes/interests"))

    wait_for(exported, timeout=30, message="not every shard's and batch's span reached the receiver")
    shards = spans_named(otlp, trace_id, "process publish shard")
    [request] = spans_named(otlp, trace_id, "POST /publish_api/v1/instances/{instance}/publishes/interests")
    assert request["resource"]["service.instance.id"] != ""
    assert {span["parentSpanId"] for span in shards} == {request["spanId"]}, "each shard continues the request's span"
    nodes = {span["resource"]["service.instance.id"] for span in shards}
    assert len(nodes) == 2, f"the shards' spans came from {nodes}"
    batches = spans_named(otlp, trace_id, "send apns")
    assert sum(int(batch["attrs"]["messaging.batch.message_count"]) for batch in batches) == SHARD_DEVICES
    assert {span["traceId"] for span in otlp.trace(trace_id)} == {trace_id}
    assert not otlp.violations, otlp.violations
