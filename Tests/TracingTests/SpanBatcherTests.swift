import Tracing
import XCTest

final class SpanBatcherTests: XCTestCase {
    private func span(_ name: String = "s") -> SpanData {
        let context = TraceContext(traceID: TraceID.random(), spanID: SpanID.random(), flags: 1)
        return SpanData(
            context: context, parentSpanID: nil, name: name, kind: .internal, startTimeUnixNano: 1,
            endTimeUnixNano: 2)
    }

    func testDefaultsAreTheOpenTelemetryOnes() {
        let settings = SpanBatcher.Settings()
        XCTAssertEqual(settings.maxQueueSize, 2048)
        XCTAssertEqual(settings.maxExportBatchSize, 512)
        XCTAssertEqual(settings.scheduleDelay, .seconds(5))
        XCTAssertEqual(settings.exportTimeout, .seconds(30))
    }

    func testAFullQueueDropsNewSpansAndCountsThem() {
        var batcher = SpanBatcher(now: 0)
        for index in 0..<2048 { XCTAssertTrue(batcher.add(span("\(index)"), now: 0)) }
        XCTAssertFalse(batcher.add(span("late"), now: 0))
        XCTAssertFalse(batcher.add(span("later"), now: 0))
        XCTAssertEqual(batcher.dropped, 2)
        XCTAssertEqual(batcher.queued, 2048)
    }

    func testAFullBatchLeavesAtOnceAndAtMost512PerExport() {
        var batcher = SpanBatcher(now: 0)
        for _ in 0..<511 { _ = batcher.add(span(), now: 0) }
        XCTAssertEqual(batcher.next(now: 1), .wait(until: 5_000_000_000))
        _ = batcher.add(span(), now: 0)
        for _ in 0..<600 { _ = batcher.add(span(), now: 0) }
        guard case .export(let first) = batcher.next(now: 2) else { return XCTFail("expected an export") }
        XCTAssertEqual(first.count, 512)
        guard case .export(let second) = batcher.next(now: 3) else { return XCTFail("expected an export") }
        XCTAssertEqual(second.count, 512)
        XCTAssertEqual(batcher.queued, 88)
        XCTAssertEqual(batcher.next(now: 4), .wait(until: 5_000_000_003))
    }

    func testAPartialBatchLeavesAfterTheScheduleDelay() {
        var batcher = SpanBatcher(now: 0)
        XCTAssertEqual(batcher.next(now: 0), .wait(until: nil))
        _ = batcher.add(span("a"), now: 0)
        XCTAssertEqual(batcher.next(now: 4_999_999_999), .wait(until: 5_000_000_000))
        guard case .export(let spans) = batcher.next(now: 5_000_000_000) else { return XCTFail("expected an export") }
        XCTAssertEqual(spans.map(\.name), ["a"])
    }

    func testAfterAnIdleSpellTheFirstSpanStartsTheSchedule() {
        var batcher = SpanBatcher(now: 0)
        _ = batcher.add(span("late"), now: 60_000_000_000)
        XCTAssertEqual(batcher.next(now: 60_000_000_001), .wait(until: 65_000_000_000))
        _ = batcher.add(span("company"), now: 61_000_000_000)
        guard case .export(let spans) = batcher.next(now: 65_000_000_000) else { return XCTFail("expected an export") }
        XCTAssertEqual(spans.map(\.name), ["late", "company"])
    }

    func testTheProcessorExportsALoneSpanAfterTheScheduleDelay() {
        let exported = DispatchSemaphore(value: 0)
        let processor = BatchSpanProcessor(
            settings: SpanBatcher.Settings(scheduleDelay: .milliseconds(50)),
            export: { _, done in
                exported.signal()
                done()
            }, onDrop: { _ in })
        // Let the export thread reach its wait on an empty queue (the span must wake it, not find it running).
        Thread.sleep(forTimeInterval: 0.2)
        processor.enqueue(span())
        XCTAssertEqual(exported.wait(timeout: .now() + 5), .success, "a lone span never left")
        processor.shutdown(timeout: .seconds(5))
    }

    func testFlushingExportsWithoutWaiting() {
        var batcher = SpanBatcher(now: 0)
        _ = batcher.add(span("a"), now: 0)
        guard case .export(let spans) = batcher.next(now: 1, flushing: true) else {
            return XCTFail("expected an export")
        }
        XCTAssertEqual(spans.count, 1)
    }

    func testProcessorNeverBlocksOnASlowExportAndDropsPastTheQueue() throws {
        let release = DispatchSemaphore(value: 0)
        let exportedCount = Counter()
        let droppedCount = Counter()
        let started = DispatchSemaphore(value: 0)
        let processor = BatchSpanProcessor(
            settings: SpanBatcher.Settings(maxQueueSize: 8, maxExportBatchSize: 4),
            export: { spans, done in
                exportedCount.add(spans.count)
                started.signal()
                DispatchQueue.global().async {
                    release.wait()
                    done()
                }
            }, onDrop: { droppedCount.add($0) })
        for _ in 0..<4 { processor.enqueue(span()) }
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        // The first export hangs: 8 more fit, the rest are dropped, and enqueue returns at once all the same.
        for _ in 0..<20 { processor.enqueue(span()) }
        XCTAssertEqual(droppedCount.value, 12)
        release.signal()
        release.signal()
        release.signal()
        processor.shutdown(timeout: .seconds(10))
        XCTAssertEqual(exportedCount.value, 12)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func add(_ amount: Int) { lock.withLock { total += amount } }
    var value: Int { lock.withLock { total } }
}
