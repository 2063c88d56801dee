import Tracing
import XCTest

final class SamplerTests: XCTestCase {
    private func ids(_ count: Int) -> [TraceID] { (0..<count).map { _ in TraceID.random() } }

    func testEnvironmentNamesMapToSamplers() {
        XCTAssertEqual(Sampler(name: "always_on", argument: nil), .alwaysOn)
        XCTAssertEqual(Sampler(name: "always_off", argument: nil), .alwaysOff)
        XCTAssertEqual(Sampler(name: "traceidratio", argument: "0.25"), .traceIDRatio(0.25))
        XCTAssertEqual(
            Sampler(name: "parentbased_traceidratio", argument: "0.5"), .parentBased(root: .traceIDRatio(0.5)))
        XCTAssertEqual(Sampler(name: "parentbased_always_off", argument: nil), .parentBased(root: .alwaysOff))
        XCTAssertNil(Sampler(name: "traceidratio", argument: "1.5"))
        XCTAssertNil(Sampler(name: "jaeger_remote", argument: nil))
    }

    func testRatioSamplesAboutItsShareAndDecidesTheSameForOneTraceID() {
        let sampler = Sampler.traceIDRatio(0.25)
        let all = ids(20_000)
        let sampled = all.filter { sampler.shouldSample(parent: nil, traceID: $0) }.count
        XCTAssertGreaterThan(sampled, 4_000)
        XCTAssertLessThan(sampled, 6_000)
        for id in all.prefix(100) {
            XCTAssertEqual(
                sampler.shouldSample(parent: nil, traceID: id), sampler.shouldSample(parent: nil, traceID: id))
        }
        XCTAssertTrue(ids(1000).allSatisfy { Sampler.traceIDRatio(1).shouldSample(parent: nil, traceID: $0) })
        XCTAssertFalse(ids(1000).contains { Sampler.traceIDRatio(0).shouldSample(parent: nil, traceID: $0) })
    }

    func testParentBasedFollowsTheParentsFlagAndTheRootSamplerWithoutParent() throws {
        let sampled = try XCTUnwrap(
            TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let unsampled = try XCTUnwrap(
            TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
        let sampler = Sampler.parentBased(root: .alwaysOff)
        XCTAssertTrue(sampler.shouldSample(parent: sampled, traceID: sampled.traceID))
        XCTAssertFalse(Sampler.parentBased(root: .alwaysOn).shouldSample(parent: unsampled, traceID: unsampled.traceID))
        XCTAssertFalse(sampler.shouldSample(parent: nil, traceID: TraceID.random()))
        XCTAssertTrue(Sampler.default.shouldSample(parent: nil, traceID: TraceID.random()))
    }

    func testTracerChildKeepsTraceIDAndUnsampledSpanStillCarriesContext() throws {
        let recorder = Recorder()
        let parent = try XCTUnwrap(
            TraceContext(
                traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                tracestate: "a=1"))
        let tracer = Tracer(sampler: .default, sink: recorder)
        let unsampled = tracer.startSpan("x", parent: parent)
        unsampled.end()
        XCTAssertFalse(unsampled.isRecording)
        XCTAssertEqual(unsampled.context.traceID, parent.traceID)
        XCTAssertNotEqual(unsampled.context.spanID, parent.spanID)
        XCTAssertEqual(unsampled.context.traceState, "a=1")
        XCTAssertTrue(recorder.spans.isEmpty)
        let root = tracer.startSpan("root", kind: .server, parent: nil)
        let child = tracer.startSpan("child", parent: root.context)
        child.end()
        child.end()
        root.end()
        XCTAssertEqual(recorder.spans.map(\.name), ["child", "root"])
        XCTAssertEqual(recorder.spans[0].parentSpanID, root.context.spanID)
        XCTAssertNil(recorder.spans[1].parentSpanID)
        XCTAssertEqual(recorder.spans[0].context.traceID, root.context.traceID)
    }
}

final class Recorder: SpanSink, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [SpanData] = []
    func enqueue(_ span: SpanData) { lock.withLock { stored.append(span) } }
    var spans: [SpanData] { lock.withLock { stored } }
}
