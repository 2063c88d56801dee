import APNsClient
import Foundation
import PublishEngine
import PushStore
import Tracing
import XCTest

/// A traced run: its CONSUMER span continues the trace context stored with the job, its results are counted into
/// per-platform batch spans under it (one per checkpoint, never one per device), and with tracing off nothing is
/// recorded.
final class EngineTracingTests: XCTestCase {
    private let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    private func run(_ fixture: EngineFixture, tracer: Tracer, sender: FakeSender) async throws {
        var settings = EngineFixture.settings()
        settings.tracer = tracer
        let store = ScriptedStore(fixture.base)
        await fixture.runToFinish(store, sender: sender, settings: settings)
    }

    func testARunContinuesTheStoredTraceWithOneBatchSpanPerCheckpointAndItsOutcomes() async throws {
        let fixture = EngineFixture()
        let devices = try await fixture.addDevices(1...3)
        var job = PublishJob(
            instanceID: fixture.instanceID, publishID: "traced", kind: .interests, targets: ["news"],
            payload: EngineFixture.plan(), createdAt: Date())
        job.traceParent = parent
        job.traceState = "vendor=x"
        _ = try await fixture.base.enqueuePublish(job)
        let sender = FakeSender()
        sender.script(devices[2], .respond(.rejected(410, .unregistered)))
        let spans = SpanRecorder()
        try await run(fixture, tracer: Tracer(sampler: .default, sink: spans), sender: sender)

        let recorded = spans.spans
        let run = try XCTUnwrap(recorded.first { $0.name == "process publish" })
        XCTAssertEqual(run.kind, .consumer)
        XCTAssertEqual(run.context.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(run.parentSpanID?.hex, "00f067aa0ba902b7")
        XCTAssertTrue(run.parentIsRemote)
        XCTAssertEqual(run.context.traceState, "vendor=x")
        XCTAssertTrue(run.attributes.contains(Attribute("push.run.outcome", "finished")))
        XCTAssertTrue(run.attributes.contains(Attribute("beams.publish_id", "traced")))
        let batches = recorded.filter { $0.name == "send apns" }
        XCTAssertFalse(batches.isEmpty)
        XCTAssertTrue(batches.allSatisfy { $0.kind == .client && $0.parentSpanID == run.context.spanID })
        func total(_ key: String) -> Int {
            batches.reduce(0) { sum, span in
                if case .int(let value)? = span.attributes.first(where: { $0.key == key })?.value {
                    sum + value
                } else {
                    sum
                }
            }
        }
        XCTAssertEqual(total("messaging.batch.message_count"), 3, "every result in exactly one batch")
        XCTAssertEqual(total("push.accepted"), 2)
        XCTAssertEqual(total("push.failed"), 1)
        let reasons = batches.flatMap(\.events).compactMap { event in
            event.attributes.first { $0.key == "push.reason" }?.value
        }
        XCTAssertTrue(reasons.contains(.string("Unregistered")), "\(reasons)")
    }

    func testAnAlwaysOffSamplerRecordsNothingEvenUnderASampledParent() async throws {
        let fixture = EngineFixture()
        _ = try await fixture.addDevices(1...2)
        var job = PublishJob(
            instanceID: fixture.instanceID, publishID: "untraced", kind: .interests, targets: ["news"],
            payload: EngineFixture.plan(), createdAt: Date())
        job.traceParent = parent
        _ = try await fixture.base.enqueuePublish(job)
        let spans = SpanRecorder()
        try await run(fixture, tracer: Tracer(sampler: .alwaysOff, sink: spans), sender: FakeSender())
        XCTAssertTrue(spans.spans.isEmpty)
    }
}

final class SpanRecorder: SpanSink, @unchecked Sendable {
    // @unchecked Sendable: `stored` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: [SpanData] = []
    func enqueue(_ span: SpanData) { lock.withLock { stored.append(span) } }
    var spans: [SpanData] { lock.withLock { stored } }
}
