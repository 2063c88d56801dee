import JSON
import Tracing
import XCTest

final class OTLPJSONEncoderTests: XCTestCase {
    func testSpansFollowTheOTLPJSONMapping() throws {
        let parent = try XCTUnwrap(
            TraceContext(
                traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                tracestate: "vendor=x"))
        let context = TraceContext(
            traceID: parent.traceID, spanID: try XCTUnwrap(SpanID(0xABC)), flags: 1,
            traceState: "vendor=x")
        let span = SpanData(
            context: context, parentSpanID: parent.spanID, parentIsRemote: true,
            name: "POST /publish_api/v1/instances/{instance}/publishes/interests", kind: .server,
            startTimeUnixNano: 1_700_000_000_123_456_789, endTimeUnixNano: 1_700_000_000_223_456_789,
            attributes: [
                Attribute("http.response.status_code", 200), Attribute("ok", true),
                Attribute("ratio", .double(0.5)), Attribute("beams.instance_id", "i"),
            ],
            events: [SpanEvent(name: "e", timeUnixNano: 5, attributes: [Attribute("n", 2)])],
            statusCode: .error, statusMessage: "boom")
        let encoder = OTLPJSONEncoder(
            resource: [Attribute("service.name", "push-server")], scopeName: "push-server",
            scopeVersion: "1.2.3")
        let body = try XCTUnwrap(JSONValue.parse(encoder.encode([span])))
        let resourceSpans = try XCTUnwrap(body["resourceSpans"]?.arrayValue?.first)
        XCTAssertEqual(
            resourceSpans["resource"]?["attributes"],
            [["key": "service.name", "value": ["stringValue": "push-server"]]])
        let scopeSpans = try XCTUnwrap(resourceSpans["scopeSpans"]?.arrayValue?.first)
        XCTAssertEqual(scopeSpans["scope"], ["name": "push-server", "version": "1.2.3"])
        let encoded = try XCTUnwrap(scopeSpans["spans"]?.arrayValue?.first)
        XCTAssertEqual(encoded["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(encoded["spanId"], "0000000000000abc")
        XCTAssertEqual(encoded["parentSpanId"], "00f067aa0ba902b7")
        XCTAssertEqual(encoded["traceState"], "vendor=x")
        XCTAssertEqual(encoded["kind"], 2)
        XCTAssertEqual(encoded["flags"], .int(0x301))
        XCTAssertEqual(encoded["startTimeUnixNano"], "1700000000123456789")
        XCTAssertEqual(encoded["endTimeUnixNano"], "1700000000223456789")
        XCTAssertEqual(encoded["status"], ["code": 2, "message": "boom"])
        XCTAssertEqual(
            encoded["attributes"]?.arrayValue?.map { $0["value"] ?? .null },
            [["intValue": "200"], ["boolValue": true], ["doubleValue": 0.5], ["stringValue": "i"]])
        XCTAssertEqual(
            encoded["events"],
            [
                [
                    "name": "e", "timeUnixNano": "5",
                    "attributes": [["key": "n", "value": ["intValue": "2"]]],
                ]
            ])
    }

    func testARootSpanHasNoParentAndAnUnsetStatusHasCodeZero() throws {
        let context = TraceContext(traceID: TraceID.random(), spanID: SpanID.random(), flags: 1)
        let span = SpanData(
            context: context, parentSpanID: nil, name: "r", kind: .consumer, startTimeUnixNano: 10,
            endTimeUnixNano: 20)
        let encoder = OTLPJSONEncoder(resource: [], scopeName: "s", scopeVersion: "v")
        let body = try XCTUnwrap(JSONValue.parse(encoder.encode([span])))
        let encoded = try XCTUnwrap(body["resourceSpans"]?[0]?["scopeSpans"]?[0]?["spans"]?[0])
        XCTAssertNil(encoded["parentSpanId"])
        XCTAssertNil(encoded["traceState"])
        XCTAssertEqual(encoded["status"], ["code": 0])
        XCTAssertEqual(encoded["kind"], 5)
        XCTAssertEqual(encoded["flags"], .int(0x101))
    }
}

extension JSONValue {
    fileprivate subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }
}
