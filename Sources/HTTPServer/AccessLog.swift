import Logging

/// One loop's access log: a `Request completed` record per response at `info`, handed to the logger's sink in
/// batches (at the end of each loop iteration, or every `batchSize` records), so a buffered sink takes one queue
/// operation per batch instead of one per request. The writer thread renders the lines (`BufferedLogSink`).
///
/// Nothing is held past the loop iteration that produced it, so a clean shutdown loses no line: the loop flushes
/// before it exits, and the sink is flushed after the server stopped.
struct AccessLog {
    static let message = "Request completed"
    static let batchSize = 256

    let logger: Logger
    private var pending: [LogRecord] = []

    init(logger: Logger) {
        self.logger = logger
    }

    var isEnabled: Bool { logger.isEnabled(.info) }

    /// Queues the line for `record`.
    mutating func append(_ record: AccessLogRecord) {
        guard let line = logger.record(.info, Self.message, [
            "method": record.method, "route": record.route, "status": String(record.status),
            "bytes_in": String(record.bytesIn), "bytes_out": String(record.bytesOut),
            "duration_ms": Self.millis(record.duration), "request_id": record.requestID, "peer": record.peer,
        ]) else { return }
        if pending.isEmpty { pending.reserveCapacity(Self.batchSize) }
        pending.append(line)
        if pending.count >= Self.batchSize { flush() }
    }

    /// Hands the queued lines to the sink.
    mutating func flush() {
        guard !pending.isEmpty else { return }
        logger.write(pending)
        pending.removeAll(keepingCapacity: true)
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
