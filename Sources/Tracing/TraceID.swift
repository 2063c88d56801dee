/// A W3C / OpenTelemetry trace id: 16 bytes, never all zero (an all-zero id is invalid everywhere it appears).
package struct TraceID: Hashable, Sendable, CustomStringConvertible {
    /// The first and last 8 bytes, big-endian: `high` is bytes 0-7, `low` bytes 8-15.
    package let high: UInt64
    package let low: UInt64

    /// nil for the all-zero id.
    package init?(high: UInt64, low: UInt64) {
        guard high != 0 || low != 0 else { return nil }
        self.high = high
        self.low = low
    }

    /// 32 hex digits (either case), not all zero.
    package init?(hex: some StringProtocol) {
        let bytes = Array(hex.utf8)
        guard bytes.count == 32, let high = Hex.uint64(bytes[0..<16]), let low = Hex.uint64(bytes[16..<32]) else {
            return nil
        }
        self.init(high: high, low: low)
    }

    /// A new random id. All 16 bytes are random, so W3C level 2's "random-trace-id" flag may be set.
    package static func random() -> TraceID {
        var generator = SystemRandomNumberGenerator()
        while true {
            if let id = TraceID(high: generator.next(), low: generator.next()) { return id }
        }
    }

    /// 32 lower-case hex digits: the form of `traceparent` and of OTLP JSON.
    package var hex: String { Hex.string(high) + Hex.string(low) }
    package var description: String { hex }
}

/// A span id: 8 bytes, never all zero.
package struct SpanID: Hashable, Sendable, CustomStringConvertible {
    package let value: UInt64

    /// nil for the all-zero id.
    package init?(_ value: UInt64) {
        guard value != 0 else { return nil }
        self.value = value
    }

    /// 16 hex digits (either case), not all zero.
    package init?(hex: some StringProtocol) {
        let bytes = Array(hex.utf8)
        guard bytes.count == 16, let value = Hex.uint64(bytes[...]) else { return nil }
        self.init(value)
    }

    package static func random() -> SpanID {
        var generator = SystemRandomNumberGenerator()
        while true {
            if let id = SpanID(generator.next()) { return id }
        }
    }

    /// 16 lower-case hex digits.
    package var hex: String { Hex.string(value) }
    package var description: String { hex }
}

/// Fixed-width hex without Foundation's formatting (which is slow and locale-free only by convention).
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// 16 lower-case digits, zero-padded.
    static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                buffer[index] = digits[Int((value >> UInt64((15 - index) * 4)) & 0xF)]
            }
            return 16
        }
    }

    /// Two lower-case digits.
    static func byte(_ value: UInt8) -> String {
        String(decoding: [digits[Int(value >> 4)], digits[Int(value & 0xF)]], as: UTF8.self)
    }

    /// Up to 16 hex digits (either case) → value; nil when any is not a hex digit.
    static func uint64(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 16 else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard let nibble = nibble(byte) else { return nil }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }

    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
