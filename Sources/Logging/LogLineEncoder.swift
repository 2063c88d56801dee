import Foundation

/// Renders log records as bytes, exactly as `LogFormat.line` does, without building intermediate strings: the
/// `ts=` prefix is formatted once per second, and values that need no quoting (nearly all of an access log's)
/// are copied byte for byte. Used by `BufferedLogSink`'s writer thread, which renders every line of a busy server.
///
/// Not thread-safe (it caches the current second); each writer owns one.
public struct LogLineEncoder {
    private let journal: Bool
    private var cachedSecond = Int64.min
    /// `YYYY-MM-DDTHH:MM:SS.` for `cachedSecond`.
    private var cachedPrefix: [UInt8] = []

    /// - Parameter journal: sd-daemon priority prefixes and no timestamps (under systemd).
    public init(journal: Bool) {
        self.journal = journal
    }

    /// Appends `record`'s whole line, newline included.
    public mutating func append(_ record: LogRecord, to out: inout [UInt8]) {
        if journal {
            out.append(UInt8(ascii: "<"))
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: record.level.syslogPriority))
            out.append(UInt8(ascii: ">"))
        } else {
            out.append(contentsOf: "ts=".utf8)
            appendTimestamp(record.date, to: &out)
            out.append(UInt8(ascii: " "))
        }
        out.append(contentsOf: "level=".utf8)
        out.append(contentsOf: record.level.description.utf8)
        out.append(contentsOf: " label=".utf8)
        Self.appendQuoted(record.label, to: &out)
        out.append(contentsOf: " msg=".utf8)
        Self.appendQuoted(record.message, to: &out)
        for (key, value) in record.metadata {
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: key.utf8)
            out.append(UInt8(ascii: "="))
            Self.appendQuoted(value, to: &out)
        }
        out.append(UInt8(ascii: "\n"))
    }

    private mutating func appendTimestamp(_ date: Date, to out: inout [UInt8]) {
        let raw = Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down))
        let millis = min(max(raw, LogFormat.timestampMillis.lowerBound), LogFormat.timestampMillis.upperBound)
        var (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        if fraction < 0 {
            seconds -= 1
            fraction += 1000
        }
        if seconds != cachedSecond {
            cachedSecond = seconds
            // The whole-second part of the slow formatter's output: `YYYY-MM-DDTHH:MM:SS.`
            cachedPrefix = Array(LogFormat.timestamp(Date(timeIntervalSince1970: Double(seconds))).utf8.dropLast(4))
        }
        out.append(contentsOf: cachedPrefix)
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 100))
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10))
        out.append(UInt8(ascii: "Z"))
    }

    /// `LogFormat.quote(value)`'s bytes. Values with nothing to escape (nearly all) are copied as they are, in
    /// quotes when they hold a space or `=` (or are empty).
    static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        var needsQuotes = value.isEmpty
        for byte in value.utf8 {
            if byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: LogFormat.quote(value).utf8)
                return
            }
            if byte == 0x20 || byte == 0x3D { needsQuotes = true }
        }
        if needsQuotes { out.append(0x22) }
        out.append(contentsOf: value.utf8)
        if needsQuotes { out.append(0x22) }
    }
}
