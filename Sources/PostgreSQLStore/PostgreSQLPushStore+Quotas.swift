import Foundation
import PushStore

extension PostgreSQLPushStore: QuotaUsageReading {
    /// Two key lookups: the trigger-kept device count and the day's publish count (a missing row counts 0). Every
    /// node reads the same rows, so each shows the instance's usage on all nodes.
    public func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try await read { connection in
            let devices = try connection.query(
                "SELECT devices FROM instance_device_counts WHERE instance_id = $1", [.text(instanceID)])
            let publishes = try connection.query(
                "SELECT publishes FROM publish_day_counts WHERE instance_id = $1 AND day = $2::bigint",
                [.text(instanceID), .integer(day.number)])
            return QuotaUsage(devices: devices.first { devices.int64($0, 0) } ?? 0,
                              publishes: publishes.first { publishes.int64($0, 0) } ?? 0)
        }
    }
}
