import Foundation

/// Renders log records as bytes, exactly as `LogFormat.line` does, without building intermediate strings: the
/// `ts=` prefix is formatted once per second, and values that need no quoting (nearly all of an access log's)
/// are copied byte for byte. Used by `BufferedLogSink`'s writer thread, which renders every line of a busy server.
///
/// Not thread-safe (it caches the current second); each writer owns one.
package struct LogLineEncoder {
    private let journal: Bool
    private var cachedSecond = Int64.min
    /// `YYYY-MM-DDTHH:MM:SS.` for `cachedSecond`.
    private var cachedPrefix: [UInt8] = []

    /// - Parameter journal: sd-daemon priority prefixes and no timestamps (under systemd).
    package init(journal: Bool) {
        self.journal = journal
    }

    /// Appends `record`'s whole line, newline included.
    package mutating func append(_ record: LogRecord, to out: inout [UInt8]) {
        beginLine(level: record.level, label: record.label, message: record.message, date: record.date, to: &out)
        for (key, value) in record.metadata { Self.appendField(key, value, to: &out) }
        Self.endLine(&out)
    }

    /// Starts a line (`ts=` or the priority prefix, level, label and message); `appendField` adds the metadata and
    /// `endLine` the newline. For callers that render lines without a `LogRecord` (the HTTP access log).
    package mutating func beginLine(level: LogLevel, label: String, message: String, date: Date, to out: inout [UInt8])
    {
        appendLineStart(level: level, date: date, to: &out)
        Self.appendHead(level: level, label: label, message: message, to: &out)
    }

    /// The part of `beginLine` that changes from line to line: the timestamp (or the priority prefix).
    package mutating func appendLineStart(level: LogLevel, date: Date, to out: inout [UInt8]) {
        appendLineStart(level: level, epochMillis: Self.epochMillis(date), to: &out)
    }

    /// `appendLineStart(level:date:to:)` for an instant given as milliseconds since 1970 (`epochMillis(_:)` of the
    /// date, or `nowEpochMillis()`): no `Date` on a per-request path.
    package mutating func appendLineStart(level: LogLevel, epochMillis: Int64, to out: inout [UInt8]) {
        if journal {
            out.append(UInt8(ascii: "<"))
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: level.syslogPriority))
            out.append(UInt8(ascii: ">"))
        } else {
            out.append(contentsOf: Self.tsKey)
            appendTimestamp(epochMillis: epochMillis, to: &out)
            out.append(UInt8(ascii: " "))
        }
    }

    /// The rest of `beginLine`, the same for every line of a level, label and message: callers that write many such
    /// lines render it once and copy it after `appendLineStart`.
    package static func appendHead(level: LogLevel, label: String, message: String, to out: inout [UInt8]) {
        out.append(contentsOf: Self.levelKey)
        Self.appendBytes(level.description, to: &out)
        out.append(contentsOf: Self.labelKey)
        Self.appendQuoted(label, to: &out)
        out.append(contentsOf: Self.messageKey)
        Self.appendQuoted(message, to: &out)
    }

    /// ` key=value`, the value quoted as `LogFormat.quote` does.
    package static func appendField(_ key: String, _ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: " "))
        appendBytes(key, to: &out)
        out.append(UInt8(ascii: "="))
        appendQuoted(value, to: &out)
    }

    /// ` key=123`: what `appendField(key, String(value))` writes, without making the string.
    package static func appendField(_ key: String, _ value: Int, to out: inout [UInt8]) {
        out.append(UInt8(ascii: " "))
        appendBytes(key, to: &out)
        out.append(UInt8(ascii: "="))
        appendDecimal(value, to: &out)
    }

    /// Ends a line begun with `beginLine`.
    package static func endLine(_ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\n"))
    }

    /// `value` in decimal, as `String(value)` spells it.
    package static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude as UInt: Int.min has no positive Int.
        var rest = value.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            out.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// A string's UTF-8 bytes, copied in one go when the string is stored contiguously (nearly always).
    static func appendBytes(_ value: String, to out: inout [UInt8]) {
        var value = value
        value.withUTF8 { out.append(contentsOf: $0) }
    }

    private static let tsKey = Array("ts=".utf8)
    private static let levelKey = Array("level=".utf8)
    private static let labelKey = Array(" label=".utf8)
    private static let messageKey = Array(" msg=".utf8)

    /// Milliseconds since 1970 as `LogFormat.timestamp` reads `date` (rounded down, saturating).
    package static func epochMillis(_ date: Date) -> Int64 {
        Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The wall clock in milliseconds since 1970, read as `Date()` reads it (`CLOCK_REALTIME`) without Foundation.
    package static func nowEpochMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) &* 1000 &+ Int64(now.tv_nsec / 1_000_000)
    }

    /// Clamps `raw` to what `LogFormat` renders, makes `cachedPrefix` the prefix of its second (formatted only when
    /// the second changed) and returns its milliseconds within that second (0-999, also before 1970).
    private mutating func refreshPrefix(epochMillis raw: Int64) -> Int64 {
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
        return fraction
    }

    private mutating func appendTimestamp(epochMillis raw: Int64, to out: inout [UInt8]) {
        let fraction = refreshPrefix(epochMillis: raw)
        out.append(contentsOf: cachedPrefix)
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 100))
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10))
        out.append(UInt8(ascii: "Z"))
    }

    /// Most bytes `writeLineStart` writes.
    package static let maxLineStartBytes = 32

    /// `appendLineStart(level:epochMillis:to:)`'s bytes written at `p` (at most `maxLineStartBytes`), for callers
    /// that render a whole line with pointer writes (the HTTP access log). Returns the byte count.
    package mutating func writeLineStart(level: LogLevel, epochMillis: Int64, to p: UnsafeMutablePointer<UInt8>) -> Int
    {
        if journal {
            p[0] = UInt8(ascii: "<")
            p[1] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: level.syslogPriority)
            p[2] = UInt8(ascii: ">")
            return 3
        }
        // Without an array: the cached second's prefix is copied and the milliseconds written.
        let fraction = refreshPrefix(epochMillis: epochMillis)
        var n = 0
        for byte in Self.tsKey {
            p[n] = byte
            n += 1
        }
        for byte in cachedPrefix {
            p[n] = byte
            n += 1
        }
        p[n] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 100)
        p[n + 1] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 10 % 10)
        p[n + 2] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10)
        p[n + 3] = UInt8(ascii: "Z")
        p[n + 4] = UInt8(ascii: " ")
        return n + 5
    }

    /// The bytes `appendQuoted(value)` writes when the value needs no escaping (it is copied as it is, in quotes
    /// when it holds a space or `=` or is empty), else nil. With `writeQuoted` it renders a value with pointer
    /// writes.
    package static func plainQuotedCount(_ value: String) -> Int? {
        var value = value
        return value.withUTF8 { bytes -> Int? in
            var needsQuotes = bytes.isEmpty
            for byte in bytes {
                if byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C { return nil }
                if byte == 0x20 || byte == 0x3D { needsQuotes = true }
            }
            return bytes.count + (needsQuotes ? 2 : 0)
        }
    }

    /// Writes `value` at `p` as `appendQuoted` does, for a value whose `plainQuotedCount` is `count`; returns `count`.
    package static func writeQuoted(_ value: String, count: Int, to p: UnsafeMutablePointer<UInt8>) -> Int {
        var value = value
        value.withUTF8 { bytes in
            let quoted = count != bytes.count
            var at = p
            if quoted {
                at.pointee = 0x22
                at += 1
            }
            if let base = bytes.baseAddress { at.update(from: base, count: bytes.count) }
            at += bytes.count
            if quoted { at.pointee = 0x22 }
        }
        return count
    }

    /// `appendDecimal(value)`'s bytes written at `p` (at most 20); returns the byte count.
    package static func writeDecimal(_ value: Int, to p: UnsafeMutablePointer<UInt8>) -> Int {
        var n = 0
        if value < 0 {
            p[0] = UInt8(ascii: "-")
            n = 1
        }
        var rest = value.magnitude
        var digits = 1
        var scale: UInt = 10
        while digits < 20 && rest >= scale {
            digits += 1
            // 10^19 is the last power of ten below UInt.max; no digit count past 20 exists.
            if digits < 20 { scale &*= 10 }
        }
        var i = n + digits - 1
        repeat {
            p[i] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
            i -= 1
        } while i >= n
        return n + digits
    }

    /// `LogFormat.quote(value)`'s bytes. Values with nothing to escape (nearly all) are copied as they are, in
    /// quotes when they hold a space or `=` (or are empty).
    package static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        var value = value
        let copied = value.withUTF8 { bytes -> Bool in
            var needsQuotes = bytes.isEmpty
            for byte in bytes {
                if byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C { return false }
                if byte == 0x20 || byte == 0x3D { needsQuotes = true }
            }
            if needsQuotes { out.append(0x22) }
            out.append(contentsOf: bytes)
            if needsQuotes { out.append(0x22) }
            return true
        }
        if !copied { out.append(contentsOf: LogFormat.quote(value).utf8) }
    }
}
