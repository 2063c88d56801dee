import Foundation

/// A wall-clock time of day (`deliverAtLocalTime`: `"09:00"` or `"09:00:30"`) and when it next occurs in a time
/// zone. Seconds are allowed so that tests (and precise senders) can aim at a moment seconds away.
package struct LocalTime: Sendable, Equatable, CustomStringConvertible {
    let hour: Int
    let minute: Int
    let second: Int

    /// Parses `HH:MM` or `HH:MM:SS` (24-hour, two digits each). - Returns: nil for anything else.
    package init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
            parts.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), hour < 24, minute < 60
        else { return nil }
        let second = parts.count == 3 ? Int(parts[2]) ?? 60 : 0
        guard second < 60 else { return nil }
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    package var description: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        return "\(two(hour)):\(two(minute)):\(two(second))"
    }

    /// The first moment at or after `start` (taken to the whole second) when the clock in `zone` shows this time,
    /// in whole seconds since 1970. A time a DST jump skips falls on the next existing moment (02:30 on a spring-
    /// forward night is 03:00); a time that occurs twice is the first. nil only when the calendar finds none.
    package func nextOccurrence(onOrAfter start: Int64, in zone: TimeZone) -> Int64? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(hour: hour, minute: minute, second: second)
        // Strictly after the second before `start`: `start` itself counts.
        let from = Date(timeIntervalSince1970: TimeInterval(start - 1))
        guard
            let next = calendar.nextDate(
                after: from, matching: components, matchingPolicy: .nextTime,
                repeatedTimePolicy: .first, direction: .forward)
        else { return nil }
        return Int64(exactly: next.timeIntervalSince1970.rounded(.down))
    }
}
