import Clocks
import Dispatch
import Foundation
import Locking

/// Queues ended spans and exports them in batches on one dedicated thread (`otlp-export`), one export at a time,
/// by the rules of `SpanBatcher`. `enqueue` only takes a lock and appends: the publish path never waits for the
/// collector, and when the collector falls behind the queue fills and new spans are dropped (counted).
package final class BatchSpanProcessor: SpanSink, @unchecked Sendable {
    /// Sends one batch and reports when it is done, successfully or not (its retries included).
    package typealias Export = @Sendable ([SpanData], _ done: @escaping @Sendable () -> Void) -> Void

    private let condition = NSCondition()
    // `batcher` and `stopping` are only touched while holding `condition` (hence @unchecked Sendable).
    private var batcher: SpanBatcher
    private var stopping = false
    private let export: Export
    private let onDrop: @Sendable (Int) -> Void
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the export thread.
    /// - Parameters:
    ///   - export: sends a batch; called on the export thread, which waits for `done` before the next batch.
    ///   - onDrop: told of each span dropped by a full queue (the `/metrics` counter).
    package init(settings: SpanBatcher.Settings, export: @escaping Export, onDrop: @escaping @Sendable (Int) -> Void) {
        batcher = SpanBatcher(settings: settings, now: MonotonicClock.now())
        self.export = export
        self.onDrop = onDrop
        NamedThread.start("otlp-export") {
            // Export is background work: below the request threads (`ThreadPriority`), for the thread's whole
            // life, so lowered even where it could not come back (`BulkPriority`).
            ThreadPriority.lowerCurrentToBulk()
            self.loop()
        }
    }

    package func enqueue(_ span: SpanData) {
        condition.lock()
        let added = batcher.add(span, now: MonotonicClock.now())
        // The thread waits without a deadline while the queue is empty, and for the schedule otherwise: the first
        // span starts the schedule, a full batch leaves at once. Other spans need no wake-up.
        let wake = added && (batcher.queued == 1 || batcher.queued == batcher.settings.maxExportBatchSize)
        if wake { condition.signal() }
        condition.unlock()
        if !added { onDrop(1) }
    }

    /// Spans waiting for export now.
    package var queued: Int {
        condition.lock()
        defer { condition.unlock() }
        return batcher.queued
    }

    /// Exports what is queued and stops the thread; waits at most `timeout` for the last exports.
    package func shutdown(timeout: Duration) {
        condition.lock()
        let first = !stopping
        stopping = true
        condition.signal()
        condition.unlock()
        if first {
            _ = finished.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds)))
        }
    }

    private func loop() {
        condition.lock()
        while true {
            let step = batcher.next(now: MonotonicClock.now(), flushing: stopping)
            switch step {
            case .export(let spans):
                condition.unlock()
                let done = DispatchSemaphore(value: 0)
                export(spans) { done.signal() }
                done.wait()
                condition.lock()
            case .wait(let until):
                if stopping {
                    condition.unlock()
                    finished.signal()
                    return
                }
                if let until {
                    let now = MonotonicClock.now()
                    let seconds = until > now ? Double(until - now) / 1e9 : 0
                    _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
                } else {
                    condition.wait()
                }
            }
        }
    }
}
