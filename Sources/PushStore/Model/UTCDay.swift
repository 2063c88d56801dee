import Foundation

/// A UTC calendar day, numbered in days since 1970-01-01: the unit of the daily publish quota
/// (`PublishJob.dailyPublishQuota`). Every node counts against the same number whatever its time zone, and the
/// count resets at 00:00 UTC.
package struct UTCDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    package static let seconds: Int64 = 86_400

    /// Days since 1970-01-01 (negative before it).
    package let number: Int64

    package init(number: Int64) { self.number = number }

    /// The day `date` falls in. A moment exactly at midnight belongs to the day that starts there.
    package init(containing date: Date) {
        let seconds = date.timeIntervalSince1970
        // `floor`, not truncation: a moment before 1970 belongs to the day before, not to day 0.
        number = Int64((seconds / Double(Self.seconds)).rounded(.down))
    }

    /// 00:00:00 UTC of this day.
    package var start: Date { Date(timeIntervalSince1970: Double(number * Self.seconds)) }

    /// The following day.
    package var next: UTCDay { UTCDay(number: number + 1) }

    /// Whole seconds from `date` until the next day starts, rounded up and at least 1: a `Retry-After` that never
    /// sends a client back before the reset (and never says 0, which some clients read as "at once, again").
    package static func secondsUntilNextDay(after date: Date) -> Int {
        let left = UTCDay(containing: date).next.start.timeIntervalSince(date)
        return max(1, Int(left.rounded(.up)))
    }

    package static func < (a: UTCDay, b: UTCDay) -> Bool { a.number < b.number }

    /// `yyyy-mm-dd`.
    package var description: String {
        let c = Calendar.utc.dateComponents([.year, .month, .day], from: start)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        return "\(c.year ?? 0)-\(two(c.month ?? 0))-\(two(c.day ?? 0))"
    }
}

extension Calendar {
    fileprivate static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}

/// What an instance has used of its store-counted quotas (`QuotaUsageReading`).
package struct QuotaUsage: Sendable, Equatable {
    /// Devices registered (invalidated ones included, as the device cap counts them).
    package var devices: Int64
    /// Publishes accepted on the given day against `dailyPublishQuota` (only counted while the instance has one).
    package var publishes: Int64

    package init(devices: Int64, publishes: Int64) {
        self.devices = devices
        self.publishes = publishes
    }
}

/// A store that can report an instance's quota usage, read by every node from the same rows.
package protocol QuotaUsageReading: Sendable {
    /// The instance's device count and its publishes counted on `day`.
    func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage
}
