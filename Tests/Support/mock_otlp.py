"""A strict OTLP/HTTP JSON trace receiver: the stand-in for an OpenTelemetry collector in the end-to-end tests.

It accepts `POST /v1/traces` with `Content-Type: application/json` and checks every request against the OTLP JSON
mapping (OTLP specification, "JSON Protobuf Encoding"; trace.proto, common.proto), stricter than a collector:

- ids are hex (not base64): `traceId` 32 digits, `spanId`/`parentSpanId` 16, never all zero;
- 64-bit integers (`startTimeUnixNano`, `endTimeUnixNano`, `timeUnixNano`, `intValue`) are decimal strings;
- enums (`kind` 1..5, `status.code` 0..2) are integers, never names;
- every envelope has `resource.attributes` with a string `service.name`, a `scope` with a `name`, and spans;
- keys are the lowerCamelCase field names; an unknown key is refused (a real receiver ignores it, but a typo in
  the sender would then pass unnoticed); empty envelopes are refused (senders should not send them).

A request that breaks a rule gets `400` with a `google.rpc.Status`-shaped body naming the rule and is recorded in
`violations`; a valid one gets `200 {}` and its spans are kept. `script(status, retry_after, times)` makes the next
requests answer that status (with `Retry-After`) before any check, to test the sender's retries.

Use in-process (`OTLPReceiver().start()`, then `.url`, `.spans()`, `.stop()`), or run it to see what a server sends:
`python3 Tests/Support/mock_otlp.py --port 4318` prints each accepted span as one JSON line.
"""
import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
HEX16 = re.compile(r"^[0-9a-fA-F]{16}$")
UINT64_TEXT = re.compile(r"^[0-9]{1,20}$")
INT64_TEXT = re.compile(r"^-?[0-9]{1,19}$")

REQUEST_KEYS = {"resourceSpans"}
RESOURCE_SPANS_KEYS = {"resource", "scopeSpans", "schemaUrl"}
RESOURCE_KEYS = {"attributes", "droppedAttributesCount"}
SCOPE_SPANS_KEYS = {"scope", "spans", "schemaUrl"}
SCOPE_KEYS = {"name", "version", "attributes", "droppedAttributesCount"}
SPAN_KEYS = {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind", "startTimeUnixNano",
             "endTimeUnixNano", "attributes", "droppedAttributesCount", "events", "droppedEventsCount", "links",
             "droppedLinksCount", "status"}
EVENT_KEYS = {"timeUnixNano", "name", "attributes", "droppedAttributesCount"}
STATUS_KEYS = {"code", "message"}
VALUE_KEYS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"}


class Violation(Exception):
    """A rule the request broke; the message names the field path."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_keys(obj, allowed, path):
    if not isinstance(obj, dict):
        raise Violation(f"{path}: must be an object")
    unknown = set(obj) - allowed
    if unknown:
        raise Violation(f"{path}: unknown field(s) {sorted(unknown)}")


def check_id(value, pattern, path):
    if not isinstance(value, str) or not pattern.match(value):
        raise Violation(f"{path}: must be {'32' if pattern is HEX32 else '16'} hex digits, got {value!r}")
    if set(value) == {"0"}:
        raise Violation(f"{path}: all-zero id is invalid")


def check_nanos(value, path):
    if not isinstance(value, str) or not UINT64_TEXT.match(value) or int(value) >= 2 ** 64:
        raise Violation(f"{path}: must be a decimal string of a uint64 (JSON mapping of fixed64), got {value!r}")
    return int(value)


def check_value(value, path):
    check_keys(value, VALUE_KEYS, path)
    if len(value) != 1:
        raise Violation(f"{path}: must hold exactly one of {sorted(VALUE_KEYS)}")
    (kind, content), = value.items()
    if kind == "stringValue" and not isinstance(content, str):
        raise Violation(f"{path}.stringValue: must be a string")
    if kind == "boolValue" and not isinstance(content, bool):
        raise Violation(f"{path}.boolValue: must be true or false")
    if kind == "intValue" and not (isinstance(content, str) and INT64_TEXT.match(content)):
        raise Violation(f"{path}.intValue: must be a decimal string (int64), got {content!r}")
    if kind == "doubleValue" and not (isinstance(content, (int, float)) and not isinstance(content, bool)
                                      or content in ("NaN", "Infinity", "-Infinity")):
        raise Violation(f"{path}.doubleValue: must be a number")


def check_attributes(attributes, path):
    if not isinstance(attributes, list):
        raise Violation(f"{path}: must be an array")
    out = {}
    for index, attribute in enumerate(attributes):
        here = f"{path}[{index}]"
        check_keys(attribute, {"key", "value"}, here)
        if not isinstance(attribute.get("key"), str) or not attribute["key"]:
            raise Violation(f"{here}.key: must be a non-empty string")
        if "value" not in attribute:
            raise Violation(f"{here}.value: missing")
        check_value(attribute["value"], f"{here}.value")
        if attribute["key"] in out:
            raise Violation(f"{here}.key: {attribute['key']!r} repeated")
        (_, content), = attribute["value"].items()
        out[attribute["key"]] = content
    return out


def check_span(span, path):
    check_keys(span, SPAN_KEYS, path)
    for field in ("traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano"):
        if field not in span:
            raise Violation(f"{path}.{field}: missing")
    check_id(span["traceId"], HEX32, f"{path}.traceId")
    check_id(span["spanId"], HEX16, f"{path}.spanId")
    if "parentSpanId" in span:
        check_id(span["parentSpanId"], HEX16, f"{path}.parentSpanId")
    if not isinstance(span["name"], str) or not span["name"]:
        raise Violation(f"{path}.name: must be a non-empty string")
    if not is_int(span["kind"]) or not 1 <= span["kind"] <= 5:
        raise Violation(f"{path}.kind: must be an integer 1..5 (enums are numbers in OTLP JSON), got {span['kind']!r}")
    start = check_nanos(span["startTimeUnixNano"], f"{path}.startTimeUnixNano")
    end = check_nanos(span["endTimeUnixNano"], f"{path}.endTimeUnixNano")
    if end < start:
        raise Violation(f"{path}: ends before it starts")
    if start < 10 ** 18:
        raise Violation(f"{path}.startTimeUnixNano: not nanoseconds since 1970 ({start})")
    if "flags" in span and (not is_int(span["flags"]) or not 0 <= span["flags"] < 2 ** 32):
        raise Violation(f"{path}.flags: must be an integer (fixed32)")
    if "traceState" in span and not isinstance(span["traceState"], str):
        raise Violation(f"{path}.traceState: must be a string")
    attributes = check_attributes(span.get("attributes", []), f"{path}.attributes")
    for index, event in enumerate(span.get("events", [])):
        here = f"{path}.events[{index}]"
        check_keys(event, EVENT_KEYS, here)
        check_nanos(event.get("timeUnixNano"), f"{here}.timeUnixNano")
        if not isinstance(event.get("name"), str):
            raise Violation(f"{here}.name: must be a string")
        check_attributes(event.get("attributes", []), f"{here}.attributes")
    status = span.get("status", {})
    check_keys(status, STATUS_KEYS, f"{path}.status")
    if "code" in status and (not is_int(status["code"]) or not 0 <= status["code"] <= 2):
        raise Violation(f"{path}.status.code: must be an integer 0..2, got {status['code']!r}")
    for field in ("droppedAttributesCount", "droppedEventsCount", "droppedLinksCount"):
        if field in span and not is_int(span[field]):
            raise Violation(f"{path}.{field}: must be an integer")
    return attributes


def check_request(content_type, body):
    """Every rule above. - Returns: the spans, each a dict with its fields plus `resource`, `scope` and decoded
    `attrs`. - Raises: Violation."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        raise Violation(f"Content-Type: must be application/json, got {content_type!r}")
    try:
        request = json.loads(body)
    except ValueError as error:
        raise Violation(f"body: not JSON ({error})") from None
    check_keys(request, REQUEST_KEYS, "$")
    envelopes = request.get("resourceSpans")
    if not isinstance(envelopes, list) or not envelopes:
        raise Violation("$.resourceSpans: must be a non-empty array (do not send empty envelopes)")
    spans = []
    for r, envelope in enumerate(envelopes):
        here = f"$.resourceSpans[{r}]"
        check_keys(envelope, RESOURCE_SPANS_KEYS, here)
        if "resource" not in envelope:
            raise Violation(f"{here}.resource: missing")
        check_keys(envelope["resource"], RESOURCE_KEYS, f"{here}.resource")
        resource = check_attributes(envelope["resource"].get("attributes", []), f"{here}.resource.attributes")
        if not isinstance(resource.get("service.name"), str) or not resource["service.name"]:
            raise Violation(f"{here}.resource.attributes: service.name (a string) is required")
        scopes = envelope.get("scopeSpans")
        if not isinstance(scopes, list) or not scopes:
            raise Violation(f"{here}.scopeSpans: must be a non-empty array")
        for s, scope_spans in enumerate(scopes):
            there = f"{here}.scopeSpans[{s}]"
            check_keys(scope_spans, SCOPE_SPANS_KEYS, there)
            scope = scope_spans.get("scope")
            if scope is None:
                raise Violation(f"{there}.scope: missing")
            check_keys(scope, SCOPE_KEYS, f"{there}.scope")
            if not isinstance(scope.get("name"), str) or not scope["name"]:
                raise Violation(f"{there}.scope.name: must be a non-empty string")
            if not isinstance(scope_spans.get("spans"), list) or not scope_spans["spans"]:
                raise Violation(f"{there}.spans: must be a non-empty array")
            for index, span in enumerate(scope_spans["spans"]):
                attributes = check_span(span, f"{there}.spans[{index}]")
                spans.append({**span, "attrs": attributes, "resource": resource, "scope": scope})
    return spans


class OTLPReceiver:
    """The receiver on 127.0.0.1 (a free port). Thread-safe accessors: `spans()`, `requests`, `violations`."""

    def __init__(self, path="/v1/traces"):
        self.path = path
        self.lock = threading.Lock()
        self.requests = []     # every request: {"headers", "status", "at"}
        self.violations = []   # rule messages of refused requests
        self._spans = []
        self._script = []      # [(status, retry_after)] answered before any check
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    scripted = receiver._script.pop(0) if receiver._script else None
                record = {"headers": {k.lower(): v for k, v in self.headers.items()}, "at": time.time(),
                          "bytes": len(body)}
                spans, headers = [], {}
                if scripted:
                    status, retry_after = scripted
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    answer = {"code": 14, "message": "scripted"}
                elif self.path != receiver.path:
                    status, answer = 404, {"code": 5, "message": f"no such path {self.path}"}
                else:
                    try:
                        spans = check_request(self.headers.get("Content-Type"), body)
                    except Violation as violation:
                        status, answer = 400, {"code": 3, "message": str(violation)}
                        with receiver.lock:
                            receiver.violations.append(str(violation))
                    else:
                        status, answer = 200, {}
                record["status"] = status
                # Recorded before the answer, the request and its spans together: a test that sees the spans
                # also sees the request that brought them.
                with receiver.lock:
                    receiver._spans.extend(spans)
                    receiver.requests.append(record)
                self.answer(status, answer, headers)

            def answer(self, status, body, headers=None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def script(self, status, retry_after=None, times=1):
        """The next `times` requests get `status` (with `Retry-After: retry_after` when given), unchecked."""
        with self.lock:
            self._script += [(status, retry_after)] * times

    def spans(self):
        with self.lock:
            return list(self._spans)

    def trace(self, trace_id):
        """The accepted spans of one trace (ids compared in lower case)."""
        return [span for span in self.spans() if span["traceId"].lower() == trace_id.lower()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4318)
    args = parser.parse_args()
    receiver = OTLPReceiver()
    receiver.server.server_close()
    receiver.server = ThreadingHTTPServer(("127.0.0.1", args.port), receiver.server.RequestHandlerClass)
    printed = 0
    receiver.start()
    print(json.dumps({"port": receiver.server.server_address[1]}), flush=True)
    try:
        while True:
            time.sleep(0.5)
            spans = receiver.spans()
            for span in spans[printed:]:
                print(json.dumps({key: span[key] for key in span if key not in ("resource", "scope")}), flush=True)
            printed = len(spans)
            for violation in receiver.violations:
                print(json.dumps({"violation": violation}), flush=True)
            receiver.violations.clear()
    except KeyboardInterrupt:
        receiver.stop()


if __name__ == "__main__":
    main()
