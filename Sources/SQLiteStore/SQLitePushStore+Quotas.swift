import Foundation
import PushStore

extension SQLitePushStore: QuotaUsageReading {
    /// Two key lookups: the trigger-kept device count and the day's publish count (a missing row counts 0).
    public func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try await read { connection in
            let devices = try connection.first(
                "SELECT devices FROM instance_device_counts WHERE instance_id = ?", [.text(instanceID)]
            ) { $0.int64(0) } ?? 0
            let publishes = try connection.first(
                "SELECT publishes FROM publish_day_counts WHERE instance_id = ? AND day = ?",
                [.text(instanceID), .integer(day.number)]
            ) { $0.int64(0) } ?? 0
            return QuotaUsage(devices: devices, publishes: publishes)
        }
    }
}
