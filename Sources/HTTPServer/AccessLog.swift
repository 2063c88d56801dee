import Foundation
import Logging

/// One loop's record of completed requests: a `Request completed` line per response at `info` for the logger's
/// sink, and the `AccessLogRecord`s for the server's observer (metrics). Both are handed over in batches, so a
/// buffered sink takes one queue operation per batch instead of one per request, and the observer takes its lock
/// once per batch:
/// - records (and `LogRecord` lines for other sinks) at the end of each loop iteration, or every `batchSize`
///   requests, so a request that reads the metrics sees every request answered before it;
/// - lines rendered for a `RenderedLogSink` every `batchSize` lines, or once the oldest waited `maxDelayNanos` (the
///   loop checks at the end of each iteration and bounds its `epoll_wait` by that deadline). Each batch wakes the
///   sink's writer thread; handed over every iteration, batches held a few lines under load and the wake-ups cost
///   more than the lines (docs/BENCHMARKS.md, HTTP).
///
/// With a sink that takes rendered lines (`RenderedLogSink`: the server's `BufferedLogSink`) each line is written
/// here straight into the batch's bytes — no `LogRecord`, no per-field strings — and the writer thread only copies
/// them out. Other sinks (tests' `CapturingLogSink`) get the same line as a `LogRecord`.
///
/// No line is held longer than `maxDelayNanos`, and a clean shutdown loses no line and no count: the loop flushes
/// before it exits, and the sink is flushed after the server stopped.
///
/// A class, confined to its loop's thread: the loop calls it per request, and a struct stored in the loop would be
/// copied out and back on every call.
final class AccessLog {
    static let message = "Request completed"
    static let batchSize = 256
    /// How long a rendered line may wait on the loop for its batch to fill.
    static let maxDelayNanos: UInt64 = 10_000_000

    let logger: Logger
    /// What every line has after its timestamp, up to the method's value: level, label, message, the logger's
    /// metadata and ` method=` (`AccessLog.head`).
    private let head: [UInt8]
    let isEnabled: Bool
    /// Whether `append` has anything to do (a line to log or an observer to feed).
    let wantsRecords: Bool
    let observer: (@Sendable ([AccessLogRecord]) -> Void)?
    /// The sink that takes lines rendered here (the server's `BufferedLogSink`), with the encoder for it; nil for
    /// other sinks, which get `LogRecord`s.
    private let renderedSink: (any RenderedLogSink)?
    /// `renderedSink != nil`, without copying the existential per request.
    private let renders: Bool
    /// `renderedSink`'s encoder (unused without one).
    private var encoder: LogLineEncoder
    private var pendingBytes: [UInt8] = []
    private var pendingByteLines = 0
    /// Bytes of the last batch handed over: the next one reserves about as much.
    private var lastBatchBytes = 4096
    private var pendingLines: [LogRecord] = []
    private var pendingRecords: [AccessLogRecord] = []
    /// Monotonic ns by which the pending rendered lines must be handed over; 0 when none are pending.
    private(set) var deadline: UInt64 = 0

    init(logger: Logger, observer: (@Sendable ([AccessLogRecord]) -> Void)?) {
        self.logger = logger
        head = Self.head(label: logger.label, metadata: logger.metadata)
        isEnabled = logger.isEnabled(.info)
        wantsRecords = isEnabled || observer != nil
        self.observer = observer
        renderedSink = logger.renderedSink
        renders = renderedSink != nil
        encoder = renderedSink?.makeLineEncoder() ?? LogLineEncoder(journal: false)
    }

    /// Queues the line for `record` and the record for the observer; `now` is the loop's monotonic clock.
    func append(_ record: consuming AccessLogRecord, now: UInt64) {
        if isEnabled {
            if renders {
                if deadline == 0 { deadline = now &+ Self.maxDelayNanos }
                if pendingBytes.isEmpty { pendingBytes.reserveCapacity(lastBatchBytes + lastBatchBytes / 4) }
                Self.render(
                    record, epochMillis: LogLineEncoder.nowEpochMillis(), head: head, encoder: &encoder,
                    into: &pendingBytes)
                pendingByteLines += 1
            } else if let line = logger.record(.info, Self.message, Self.fields(record)) {
                if pendingLines.isEmpty { pendingLines.reserveCapacity(Self.batchSize) }
                pendingLines.append(line)
            }
        }
        // Last, so the record moves into the batch instead of being copied.
        if observer != nil {
            if pendingRecords.isEmpty { pendingRecords.reserveCapacity(Self.batchSize) }
            pendingRecords.append(record)
        }
        if pendingByteLines >= Self.batchSize { flushRenderedLines() }
        if pendingLines.count >= Self.batchSize || pendingRecords.count >= Self.batchSize { flushRecords() }
    }

    /// The end of a loop iteration: records and `LogRecord` lines go now, rendered lines once due.
    func endOfIteration(now: UInt64) {
        flushRecords()
        if deadline != 0 && now >= deadline { flushRenderedLines() }
    }

    /// Hands everything queued over: the lines to the sink, the records to the observer.
    func flush() {
        flushRenderedLines()
        flushRecords()
    }

    private func flushRenderedLines() {
        deadline = 0
        if let renderedSink, pendingByteLines > 0 {
            // Handed over whole: the next batch starts a new buffer (one allocation per batch, no copy).
            renderedSink.write(renderedLines: pendingBytes, count: pendingByteLines)
            lastBatchBytes = pendingBytes.count
            pendingBytes = []
            pendingByteLines = 0
        }
    }

    private func flushRecords() {
        if !pendingLines.isEmpty {
            logger.write(pendingLines)
            pendingLines.removeAll(keepingCapacity: true)
        }
        if let observer, !pendingRecords.isEmpty {
            observer(pendingRecords)
            pendingRecords.removeAll(keepingCapacity: true)
        }
    }

    /// The line's metadata, in order, as the `LogRecord` path logs it.
    static func fields(_ record: AccessLogRecord) -> KeyValuePairs<String, String> {
        [
            "method": record.method, "route": record.route, "status": String(record.status),
            "bytes_in": String(record.bytesIn), "bytes_out": String(record.bytesOut),
            "duration_ms": millis(record.duration), "request_id": record.requestID, "peer": record.peer,
        ]
    }

    /// The constant part of every line: see `head`.
    static func head(label: String, metadata: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        LogLineEncoder.appendHead(level: .info, label: label, message: message, to: &out)
        for (key, value) in metadata { LogLineEncoder.appendField(key, value, to: &out) }
        append(" method=", to: &out)
        return out
    }

    /// Renders `record`'s line exactly as `encoder` renders `logger.record(.info, message, fields(record))` made at
    /// `date`, `head` being `head(label:metadata:)` of that logger (`AccessLogTests` compares the two), without the
    /// intermediate strings.
    static func render(
        _ record: AccessLogRecord, date: Date, head: [UInt8], encoder: inout LogLineEncoder,
        into out: inout [UInt8]
    ) {
        render(record, epochMillis: LogLineEncoder.epochMillis(date), head: head, encoder: &encoder, into: &out)
    }

    /// `render(_:date:head:encoder:into:)` at an instant in milliseconds since 1970.
    static func render(
        _ record: AccessLogRecord, epochMillis: Int64, head: [UInt8], encoder: inout LogLineEncoder,
        into out: inout [UInt8]
    ) {
        if renderPlain(record, epochMillis: epochMillis, head: head, encoder: &encoder, into: &out) { return }
        encoder.appendLineStart(level: .info, epochMillis: epochMillis, to: &out)
        out.append(contentsOf: head)
        LogLineEncoder.appendQuoted(record.method, to: &out)
        append(" route=", to: &out)
        LogLineEncoder.appendQuoted(record.route, to: &out)
        append(" status=", to: &out)
        LogLineEncoder.appendDecimal(record.status, to: &out)
        append(" bytes_in=", to: &out)
        LogLineEncoder.appendDecimal(record.bytesIn, to: &out)
        append(" bytes_out=", to: &out)
        LogLineEncoder.appendDecimal(record.bytesOut, to: &out)
        append(" duration_ms=", to: &out)
        appendMillis(record.duration, to: &out)
        append(" request_id=", to: &out)
        LogLineEncoder.appendQuoted(record.requestID, to: &out)
        append(" peer=", to: &out)
        LogLineEncoder.appendQuoted(record.peer, to: &out)
        LogLineEncoder.endLine(&out)
    }

    /// The line when no value needs escaping (nearly always): its greatest possible length is reserved once and
    /// written with pointer stores, where appending piece by piece checked the array's capacity and uniqueness ~30
    /// times a line (measured on the per-request path). Returns false, having written nothing, when a value needs
    /// escaping; `render` then takes the general path, which writes the same bytes.
    private static func renderPlain(
        _ record: AccessLogRecord, epochMillis: Int64, head: [UInt8],
        encoder: inout LogLineEncoder, into out: inout [UInt8]
    ) -> Bool {
        guard let method = LogLineEncoder.plainQuotedCount(record.method),
            let route = LogLineEncoder.plainQuotedCount(record.route),
            let requestID = LogLineEncoder.plainQuotedCount(record.requestID),
            let peer = LogLineEncoder.plainQuotedCount(record.peer)
        else { return false }
        // Line start, head, the four values, the keys' literals, three integers and the milliseconds (an integer,
        // a point and three digits), the newline.
        let bound =
            LogLineEncoder.maxLineStartBytes + head.count + method + route + requestID + peer
            + Self.keysBytes + 3 * 20 + 24 + 1
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bound))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int in
            // The buffer holds `start + bound` bytes, so it has a base address.
            guard let base = buffer.baseAddress else { return 0 }
            var p = base + start
            p += encoder.writeLineStart(level: .info, epochMillis: epochMillis, to: p)
            head.withUnsafeBufferPointer { bytes in
                if let from = bytes.baseAddress { p.update(from: from, count: bytes.count) }
            }
            p += head.count
            p += LogLineEncoder.writeQuoted(record.method, count: method, to: p)
            p += write(" route=", to: p)
            p += LogLineEncoder.writeQuoted(record.route, count: route, to: p)
            p += write(" status=", to: p)
            p += LogLineEncoder.writeDecimal(record.status, to: p)
            p += write(" bytes_in=", to: p)
            p += LogLineEncoder.writeDecimal(record.bytesIn, to: p)
            p += write(" bytes_out=", to: p)
            p += LogLineEncoder.writeDecimal(record.bytesOut, to: p)
            p += write(" duration_ms=", to: p)
            let micros = record.duration.nanoseconds / 1000
            p += LogLineEncoder.writeDecimal(Int(micros / 1000), to: p)
            p.pointee = UInt8(ascii: ".")
            p += 1
            p += writeMillisFraction(Int(micros % 1000), to: p)
            p += write(" request_id=", to: p)
            p += LogLineEncoder.writeQuoted(record.requestID, count: requestID, to: p)
            p += write(" peer=", to: p)
            p += LogLineEncoder.writeQuoted(record.peer, count: peer, to: p)
            p.pointee = UInt8(ascii: "\n")
            p += 1
            return p - (base + start)
        }
        out.removeLast(bound - written)
        return true
    }

    /// The literal keys `renderPlain` writes between the values.
    private static let keysBytes = " route= status= bytes_in= bytes_out= duration_ms= request_id= peer=".utf8.count

    private static func write(_ literal: StaticString, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p.update(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
        return literal.utf8CodeUnitCount
    }

    /// The digits after the point of `appendMillis` for `fraction` thousandths (0...999): `0`, or up to three
    /// digits without trailing zeros.
    private static func writeMillisFraction(_ fraction: Int, to p: UnsafeMutablePointer<UInt8>) -> Int {
        if fraction == 0 {
            p.pointee = UInt8(ascii: "0")
            return 1
        }
        var value = fraction
        var count = 3
        while value % 10 == 0 {
            value /= 10
            count -= 1
        }
        // `value` fills `count` places, with leading zeros (`0.042`: 42 in three places).
        for i in stride(from: count - 1, through: 0, by: -1) {
            p[i] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10)
            value /= 10
        }
        return count
    }

    /// A literal's bytes, copied in one go.
    private static func append(_ literal: StaticString, to out: inout [UInt8]) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Milliseconds with microsecond precision, written as `String(Double(micros) / 1000)` would (`0.042`,
    /// `12.0`, `1.5`) without the cost of formatting a floating-point number.
    static func millis(_ duration: Duration) -> String {
        var bytes: [UInt8] = []
        appendMillis(duration, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `millis(duration)`'s bytes.
    static func appendMillis(_ duration: Duration, to out: inout [UInt8]) {
        let micros = duration.nanoseconds / 1000
        LogLineEncoder.appendDecimal(Int(micros / 1000), to: &out)
        out.append(UInt8(ascii: "."))
        var fraction = Int(micros % 1000)
        if fraction == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        // Leading zeros up to `digits` places (`0.042`: fraction 42 in 3 places).
        if digits >= 2 && fraction < 10 { out.append(UInt8(ascii: "0")) }
        if digits == 3 && fraction < 100 { out.append(UInt8(ascii: "0")) }
        LogLineEncoder.appendDecimal(fraction, to: &out)
    }
}
