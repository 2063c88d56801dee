import Locking

/// The batch span processor's rules as a pure state machine (OpenTelemetry's `BatchSpanProcessor` defaults):
/// ended spans wait in a bounded queue; a batch leaves when `maxExportBatchSize` spans wait or `scheduleDelay`
/// passed since the last export (or, after an idle spell, since the first span arrived: a lone span waits for
/// company rather than leaving alone); a full queue drops the new span and counts it. Times are `MonotonicClock`
/// nanoseconds passed in, so tests drive it without threads or sleeps.
package struct SpanBatcher: Sendable {
    /// The limits, by default those of the OpenTelemetry specification (`OTEL_BSP_*`).
    package struct Settings: Sendable, Equatable {
        /// Spans held at most (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048); more are dropped.
        package var maxQueueSize: Int
        /// Spans per export at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, 512).
        package var maxExportBatchSize: Int
        /// Longest wait between exports while spans wait (`OTEL_BSP_SCHEDULE_DELAY`, 5000 ms).
        package var scheduleDelay: Duration
        /// Longest time one export (with its retries) may take (`OTEL_BSP_EXPORT_TIMEOUT`, 30000 ms).
        package var exportTimeout: Duration

        package init(
            maxQueueSize: Int = 2048, maxExportBatchSize: Int = 512, scheduleDelay: Duration = .seconds(5),
            exportTimeout: Duration = .seconds(30)
        ) {
            self.maxQueueSize = max(1, maxQueueSize)
            self.maxExportBatchSize = min(max(1, maxExportBatchSize), self.maxQueueSize)
            self.scheduleDelay = scheduleDelay
            self.exportTimeout = exportTimeout
        }
    }

    /// What the export thread does next.
    package enum Step: Sendable, Equatable {
        /// Export these spans (then report `exported(now:)`).
        case export([SpanData])
        /// Wait until this monotonic time (nil: until a span arrives), then ask again.
        case wait(until: UInt64?)
    }

    package let settings: Settings
    private var queue = FIFO<SpanData>(compactAfter: 1024)
    private var lastExport: UInt64
    /// Spans refused because the queue was full, since the start.
    package private(set) var dropped = 0

    package init(settings: Settings = Settings(), now: UInt64) {
        self.settings = settings
        lastExport = now
    }

    package var queued: Int { queue.count }

    /// Queues an ended span at `now`. - Returns: false when the queue is full and the span was dropped (and
    /// counted).
    package mutating func add(_ span: SpanData, now: UInt64) -> Bool {
        guard queue.count < settings.maxQueueSize else {
            dropped += 1
            return false
        }
        if queue.isEmpty, now > lastExport &+ settings.scheduleDelay.nanoseconds {
            // Idle longer than the delay: the schedule starts with this span.
            lastExport = now
        }
        queue.append(span)
        return true
    }

    /// Whether adding made a full batch wait: the moment to wake the export thread (once per batch, not per span).
    package var hasFullBatch: Bool { queue.count >= settings.maxExportBatchSize }

    /// The next step at `now`. `flushing` (shutdown) exports whatever waits without waiting for the schedule.
    package mutating func next(now: UInt64, flushing: Bool = false) -> Step {
        if queue.isEmpty { return .wait(until: nil) }
        let due = lastExport &+ settings.scheduleDelay.nanoseconds
        if flushing || queue.count >= settings.maxExportBatchSize || now >= due {
            lastExport = now
            return .export(queue.popFirst(max: settings.maxExportBatchSize))
        }
        return .wait(until: due)
    }
}
