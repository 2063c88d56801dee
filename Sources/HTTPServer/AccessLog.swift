import Logging

/// One loop's record of completed requests: a `Request completed` line per response at `info` for the logger's
/// sink, and the `AccessLogRecord`s for the server's observer (metrics). Both are handed over in batches — at the
/// end of each loop iteration, or every `batchSize` requests — so a buffered sink takes one queue operation per
/// batch instead of one per request, and the observer can take its lock once per batch (the writer thread renders
/// the lines: `BufferedLogSink`).
///
/// Nothing is held past the loop iteration that produced it, so a clean shutdown loses no line and no count: the
/// loop flushes before it exits, and the sink is flushed after the server stopped.
struct AccessLog {
    static let message = "Request completed"
    static let batchSize = 256

    let logger: Logger
    let observer: (@Sendable ([AccessLogRecord]) -> Void)?
    private var pendingLines: [LogRecord] = []
    private var pendingRecords: [AccessLogRecord] = []

    init(logger: Logger, observer: (@Sendable ([AccessLogRecord]) -> Void)?) {
        self.logger = logger
        self.observer = observer
    }

    var isEnabled: Bool { logger.isEnabled(.info) }
    /// Whether `append` has anything to do (a line to log or an observer to feed).
    var wantsRecords: Bool { isEnabled || observer != nil }

    /// Queues the line for `record` and the record for the observer.
    mutating func append(_ record: AccessLogRecord) {
        if observer != nil {
            if pendingRecords.isEmpty { pendingRecords.reserveCapacity(Self.batchSize) }
            pendingRecords.append(record)
        }
        if let line = logger.record(.info, Self.message, [
            "method": record.method, "route": record.route, "status": String(record.status),
            "bytes_in": String(record.bytesIn), "bytes_out": String(record.bytesOut),
            "duration_ms": Self.millis(record.duration), "request_id": record.requestID, "peer": record.peer,
        ]) {
            if pendingLines.isEmpty { pendingLines.reserveCapacity(Self.batchSize) }
            pendingLines.append(line)
        }
        if pendingLines.count >= Self.batchSize || pendingRecords.count >= Self.batchSize { flush() }
    }

    /// Hands the queued lines to the sink and the queued records to the observer.
    mutating func flush() {
        if !pendingLines.isEmpty {
            logger.write(pendingLines)
            pendingLines.removeAll(keepingCapacity: true)
        }
        if let observer, !pendingRecords.isEmpty {
            observer(pendingRecords)
            pendingRecords.removeAll(keepingCapacity: true)
        }
    }

    /// Milliseconds with microsecond precision, written as `String(Double(micros) / 1000)` would (`0.042`,
    /// `12.0`, `1.5`) without the cost of formatting a floating-point number.
    static func millis(_ duration: Duration) -> String {
        let micros = duration.nanoseconds / 1000
        var fraction = micros % 1000
        var text = String(micros / 1000) + "."
        if fraction == 0 { return text + "0" }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let shown = String(fraction)
        text += String(repeating: "0", count: digits - shown.count) + shown
        return text
    }
}
