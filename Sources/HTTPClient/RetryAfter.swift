import Clocks

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an IMF-fixdate. The one parser for every sender that reads
/// the header (FCM, Web Push).
package enum RetryAfter {
    /// Delays above this are capped: a push service asking for more than a day is treated as asking for a day,
    /// and longer digit strings cannot overflow.
    package static let maxSeconds = 86_400

    /// The delay in seconds from `now` (UNIX seconds), 0 for a date in the past, nil when unparseable.
    package static func seconds(_ value: String, now: Int) -> Int? {
        let text = value.trimmingASCIISpaces
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            guard text.utf8.count <= 9, let seconds = Int(text) else { return maxSeconds }
            return min(seconds, maxSeconds)
        }
        guard let date = imfFixdate(text) else { return nil }
        let (delay, overflow) = date.subtractingReportingOverflow(now)
        if overflow { return now > date ? 0 : maxSeconds }
        return min(max(delay, 0), maxSeconds)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → UNIX seconds. Parsed by hand: the format is fixed-width, and libc's
    /// `strptime` depends on the locale.
    package static func imfFixdate(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
            b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20,
            String(decoding: b[26..<29], as: UTF8.self) == "GMT",
            let day = number(b[5..<7]), let year = number(b[12..<16]), let hour = number(b[17..<19]),
            let minute = number(b[20..<22]), let second = number(b[23..<25]),
            let monthIndex = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
            (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        return CivilDate.daysSinceEpoch(year: year, month: monthIndex + 1, day: day) * 86_400 + hour * 3600 + minute
            * 60 + second
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }
}

extension String {
    fileprivate var trimmingASCIISpaces: String {
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
