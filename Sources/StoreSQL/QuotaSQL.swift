import PushStore
import SQL

/// The quota usage read, the same on SQLite and PostgreSQL.
package enum QuotaSQL {
    /// Two key lookups: the trigger-kept device count and the day's publish count (a missing row counts 0).
    package static func usage(instanceID: String, day: UTCDay, on connection: some SQLConnection) throws -> QuotaUsage {
        let devices =
            try connection.fetchOne(
                "SELECT devices FROM instance_device_counts WHERE instance_id = \(instanceID)"
            ) { row in try row.decode("devices", as: Int64.self) } ?? 0
        let publishes =
            try connection.fetchOne(
                "SELECT publishes FROM publish_day_counts WHERE instance_id = \(instanceID) AND day = \(day.number)"
            ) { row in try row.decode("publishes", as: Int64.self) } ?? 0
        return QuotaUsage(devices: devices, publishes: publishes)
    }
}
