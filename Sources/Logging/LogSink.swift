import Foundation
import Locking

/// One structured log record: a static message plus key/value metadata (never interpolated into the message).
package struct LogRecord: Sendable {
    package var level: LogLevel
    package var label: String
    package var message: String
    package var metadata: [(String, String)]
    package var date: Date

    package init(level: LogLevel, label: String, message: String, metadata: [(String, String)], date: Date = Date()) {
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
        self.date = date
    }
}

/// Where log records go. Implementations must be thread-safe: loggers are shared across threads.
package protocol LogSink: Sendable {
    func write(_ record: LogRecord)
    /// Writes several records in order; sinks that queue (`BufferedLogSink`) take them in one operation.
    func write(contentsOf records: [LogRecord])
}

extension LogSink {
    package func write(contentsOf records: [LogRecord]) {
        for record in records { write(record) }
    }
}

/// A sink that also takes lines rendered by its callers, with an encoder it hands out, many per call.
///
/// Why: the HTTP access log writes a line per request. Rendering it on the event loop straight into bytes costs
/// less than building a `LogRecord` (an array of string pairs) there and rendering it on the writer thread.
package protocol RenderedLogSink: LogSink {
    /// An encoder whose lines are what this sink writes for the same records (journal prefix or timestamp).
    func makeLineEncoder() -> LogLineEncoder
    /// Queues `count` whole lines (newlines included) rendered with an encoder from `makeLineEncoder()`.
    func write(renderedLines: [UInt8], count: Int)
}

/// Writes one logfmt line per record to standard error with a single `write(2)`, so lines from different
/// threads never interleave.
///
/// Under systemd (`JOURNAL_STREAM` set) each line starts with an sd-daemon priority prefix (`<6>`) and carries no
/// timestamp, because the journal records both itself.
package struct StderrLogSink: LogSink {
    private let journal: Bool

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.journal = environment["JOURNAL_STREAM"] != nil
    }

    package func write(_ record: LogRecord) {
        FileDescriptor.writeAll(2, LogFormat.line(record, journal: journal))
    }
}

/// Writing whole strings to a file descriptor (standard output or error).
package enum FileDescriptor {
    /// Writes all of `text`, retrying partial writes and EINTR; gives up silently on other errors (a closed
    /// terminal or journal must not take the server down).
    package static func writeAll(_ fd: Int32, _ text: String) {
        writeAll(fd, Array(text.utf8))
    }

    /// Writes all of `bytes`, like `writeAll(_:_:)` for a string.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}

/// Keeps records in memory; for tests that assert on what was logged (and on what was *not*, e.g. secrets).
package final class CapturingLogSink: LogSink, Sendable {
    private let stored = Locked<[LogRecord]>([])

    package init() {}

    package func write(_ record: LogRecord) {
        stored.withLock { $0.append(record) }
    }

    /// A snapshot of every record written so far.
    package var records: [LogRecord] { stored.withLock { $0 } }

    /// Every record rendered as its logfmt line, for substring assertions.
    package var lines: [String] { records.map(LogFormat.logfmt) }
}

/// logfmt rendering shared by the sinks.
package enum LogFormat {
    /// One whole output line with its newline: under systemd an sd-daemon priority prefix (`<6>`) and no
    /// timestamp (the journal records both), elsewhere a `ts=` field first.
    package static func line(_ record: LogRecord, journal: Bool) -> String {
        var line = journal ? "<\(record.level.syslogPriority)>" : "ts=\(timestamp(record.date)) "
        line += logfmt(record)
        line += "\n"
        return line
    }

    /// `level=info label=http msg="Accepted connection" peer=127.0.0.1:5000`
    package static func logfmt(_ record: LogRecord) -> String {
        var line = "level=\(record.level) label=\(quote(record.label)) msg=\(quote(record.message))"
        for (key, value) in record.metadata {
            line += " \(key)=\(quote(value))"
        }
        return line
    }

    /// The range RFC 3339's four-digit years can show: 0000-01-01T00:00:00.000Z … 9999-12-31T23:59:59.999Z.
    static let timestampMillis: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// RFC 3339 UTC with milliseconds. Dates outside years 0000–9999 (a client-supplied timestamp can be anything)
    /// are clamped to the nearest end instead of trapping or printing a malformed year.
    package static func timestamp(_ date: Date) -> String {
        let raw = Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down))
        let millis = min(max(raw, timestampMillis.lowerBound), timestampMillis.upperBound)
        // Floored division, so that instants before 1970 keep a fraction in 0...999.
        var (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        if fraction < 0 {
            seconds -= 1
            fraction += 1000
        }
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(fraction), 3))Z"
    }

    /// Quotes a value only when logfmt needs it; escapes quotes, backslashes and control characters so a
    /// hostile value can never forge a second log line.
    package static func quote(_ value: String) -> String {
        var needsQuotes = value.isEmpty
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""; needsQuotes = true
            case "\\": out += "\\\\"; needsQuotes = true
            case "\n": out += "\\n"; needsQuotes = true
            case "\r": out += "\\r"; needsQuotes = true
            case "\t": out += "\\t"; needsQuotes = true
            case " ", "=": out.unicodeScalars.append(scalar); needsQuotes = true
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                    needsQuotes = true
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return needsQuotes ? "\"\(out)\"" : out
    }
}
