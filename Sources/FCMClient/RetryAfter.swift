/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
public enum RetryAfter {
    /// The longest delay believed (one day); a larger one is clamped, so a hostile header cannot park a queue.
    public static let maxSeconds: Double = 86_400

    /// Seconds to wait from `now` (wall-clock UNIX seconds), or nil when the value is neither form. A date in
    /// the past means 0.
    public static func seconds(_ value: String, now: Int) -> Double? {
        let text = value.trimmingSpaces()
        let bytes = Array(text.utf8)
        if !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) {
            // Many digits would overflow Int; anything past the cap is the cap.
            guard bytes.count <= 9, let seconds = Int(text) else { return maxSeconds }
            return min(Double(seconds), maxSeconds)
        }
        guard let date = imfFixdate(bytes) else { return nil }
        return min(max(Double(date) - Double(now), 0), maxSeconds)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → UNIX seconds (the only date form a sender may generate).
    static func imfFixdate(_ bytes: [UInt8]) -> Int? {
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
              bytes[16] == 0x20, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 0x20,
              String(decoding: bytes[26..<29], as: UTF8.self) == "GMT"
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
              let minute = number(20..<22), let second = number(23..<25),
              let monthIndex = months.firstIndex(of: String(decoding: bytes[8..<11], as: UTF8.self)),
              (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        return daysFromCivil(year: year, month: monthIndex + 1, day: day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate func trimmingSpaces() -> String {
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
