#!/usr/bin/env python3
"""Records one publish's trace through two nodes on PostgreSQL with the strict OTLP stand-in
(Tests/Support/mock_otlp.py) and prints it as a tree, indented by parent (the example in docs/OPERATIONS.md,
"Traces (OpenTelemetry)"). A node's batch spans under one run are folded into one line with their sums. Usage:

    PUSH_SERVER_BIN=$PWD/.build/release/push-server .venv/bin/python3 bench/tracing/example_trace.py [devices] [shard size]
"""
import collections
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "sdk"))
sys.path.insert(0, str(ROOT / "Tests" / "Support"))

from beams import Beams, wait_for  # noqa: E402
from bulk import register_devices  # noqa: E402
from harness import INSTANCE_ID, LOAD_TEST_LIMITS, Environment  # noqa: E402
from mock_otlp import OTLPReceiver  # noqa: E402
from receiver import Receiver  # noqa: E402
import postgresql_cluster  # noqa: E402

KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def main():
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 1200
    shard_size = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    otlp, hook = OTLPReceiver().start(), Receiver()
    environment = Environment(Path(tempfile.mkdtemp(prefix="trace-example-")))
    try:
        storage = postgresql_cluster.storage_section("example", shardSize=shard_size)
        mock = environment.mock()
        nodes = {}
        for name in ("a", "b"):
            overrides = {"storage": storage, "engine": {"concurrentPublishes": 2, "nodeId": f"node-{name}"},
                         "limits": LOAD_TEST_LIMITS,
                         "tracing": {"enabled": True, "endpoint": otlp.url, "scheduleDelayMillis": 200}}
            nodes[name] = environment.server(mock, overrides, name=f"node-{name}")
        interest = f"example-{uuid.uuid4().hex[:6]}"
        register_devices(nodes["a"], INSTANCE_ID, [uuid.uuid4().hex * 2 for _ in range(devices)], interest)
        mock.configure(record=False, delay_ms=20)
        trace_id = uuid.uuid4().hex
        r = Beams(nodes["b"]).publish_raw(
            "/interests", {"interests": [interest], "webhookUrl": hook.url(), "apns": {"aps": {"alert": "example"}}},
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"})
        assert r.status_code == 200, r.text
        Beams(nodes["a"]).wait_finished(r.json()["publishId"], timeout=120)
        wait_for(lambda: len([s for s in otlp.trace(trace_id) if s["name"] == "POST"]) == 2, timeout=30)
        time.sleep(1)
        print_tree(otlp.trace(trace_id), trace_id)
        print(f"receiver violations: {len(otlp.violations)}")
    finally:
        hook.close()
        environment.close()
        otlp.stop()


def print_tree(spans, trace_id):
    children = collections.defaultdict(list)
    for span in spans:
        children[span.get("parentSpanId")].append(span)
    start = min(int(span["startTimeUnixNano"]) for span in spans)
    print(f"trace {trace_id}")

    def line(span, depth, folded=None):
        begin = (int(span["startTimeUnixNano"]) - start) / 1e6
        took = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e6
        node = span["resource"].get("service.instance.id", "")
        attrs = span["attrs"]
        keys = ("http.response.status_code", "push.shard", "push.run.outcome")
        if span["kind"] == 2:
            keys += ("beams.publish_id",)
        keep = {key: attrs[key] for key in keys if key in attrs}
        if folded:
            keep = folded
        detail = " ".join(f"{key}={value}" for key, value in keep.items())
        print(f"{'  ' * depth}{span['name']} [{KINDS[span['kind']]}] {node} +{begin:.0f} ms {took:.0f} ms {detail}".rstrip())

    def walk(span, depth):
        line(span, depth)
        kids = sorted(children.get(span["spanId"], []), key=lambda s: int(s["startTimeUnixNano"]))
        batches = [kid for kid in kids if kid["name"].startswith("send ")]
        for kid in kids:
            if kid not in batches:
                walk(kid, depth + 1)
        if batches:
            total = sum(int(b["attrs"]["messaging.batch.message_count"]) for b in batches)
            accepted = sum(int(b["attrs"]["push.accepted"]) for b in batches)
            line(batches[0], depth + 1, {"spans": len(batches), "messages": total, "accepted": accepted})

    for root in sorted(children.get("00f067aa0ba902b7", []), key=lambda s: int(s["startTimeUnixNano"])):
        walk(root, 0)


if __name__ == "__main__":
    main()
