import Clocks
import Foundation

/// Strict RFC 3339 timestamps (`2026-12-01T09:00:00Z`, `2026-12-01T10:00:00.250+01:00`): a date, `T`, a time
/// with optional fraction, and an explicit offset. A time without an offset is refused rather than guessed
/// (OneSignal assumes UTC-11 for those). Pure arithmetic: no formatter, no locale, no trap on any input.
package enum RFC3339 {
    /// Longest text looked at (with a nanosecond fraction and an offset it is 35 bytes).
    package static let maxLength = 40

    /// - Returns: the moment, or nil when `text` is not an RFC 3339 date-time with an offset.
    package static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.count <= maxLength else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for i in start..<(start + count) {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
            let day = digits(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
            b[16] == UInt8(ascii: ":"), let second = digits(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year), hour < 24,
            minute < 60,
            second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if b[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < b.count, (0x30...0x39).contains(b[index]) {
                fraction += Double(b[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < b.count else { return nil }
        var offset = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == b.count, let oh = digits(index + 1, 2), b[index + 3] == UInt8(ascii: ":"),
                let om = digits(index + 4, 2), oh < 24, om < 60
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        // A leap second is read as the last second of its minute: Foundation has no 60th second.
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: TimeInterval(seconds) + fraction)
    }
}
