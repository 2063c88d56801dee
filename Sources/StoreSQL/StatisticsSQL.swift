import Foundation
import PushStore
import SQL

/// An instance's statistics, the same on SQLite and PostgreSQL but for what `PublishSchema` names (the stored
/// state, shard counters, SQLite's index hint).
package enum StatisticsSQL {
    /// Devices by platform, invalidated devices, and the publishes created since `since` by state with their summed
    /// counters, in the caller's read transaction.
    package static func statistics(
        instanceID: String, since: Date, schema: PublishSchema, on connection: some SQLConnection
    ) throws -> InstanceStatistics {
        var statistics = InstanceStatistics()
        // The (instance_id, platform, token) unique index covers this count: no table rows are read.
        try connection.forEachRow(
            "SELECT platform, count(*) FROM devices WHERE instance_id = \(instanceID) GROUP BY platform"
        ) { row in
            if let platform = Platform(rawValue: try row.decode(0)) {
                statistics.devicesByPlatform[platform] = try row.decode(1, as: Int.self)
            }
        }
        // The partial index on invalidated devices keeps this proportional to the dead ones, not to all.
        statistics.invalidDevices =
            try connection.fetchOne(
                """
                SELECT count(*) FROM devices \(raw: schema.hint("devices_invalidated"))
                WHERE invalidated_at IS NOT NULL AND instance_id = \(instanceID)
                """
            ) { try $0.decode(0, as: Int.self) } ?? 0
        try connection.forEachRow(
            """
            SELECT \(raw: schema.state(of: "j")), count(*) FROM publish_jobs j
            WHERE j.instance_id = \(instanceID) AND j.created_at >= \(since) GROUP BY 1
            """
        ) { row in
            if let state = PublishState(rawValue: try row.decode(0)) {
                statistics.publishesByState[state] = try row.decode(1, as: Int.self)
            }
        }
        let jobs: SQLQuery = "SELECT id FROM publish_jobs WHERE instance_id = \(instanceID) AND created_at >= \(since)"
        var counters: [String: Int64] = [:]
        try connection.forEachRow(
            "SELECT name, sum(value) FROM (\(schema.counterRows(jobs: jobs))) AS c GROUP BY name"
        ) { row in counters[try row.decode(0)] = try row.decode(1, as: Int64.self) }
        statistics.counters = PublishCounters(storedNames: counters)
        return statistics
    }
}
