import Foundation
import PushStore

extension PostgreSQLPushStore {
    public func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try await read { connection in
            var statistics = InstanceStatistics()
            let platforms = try connection.query(
                "SELECT platform, count(*) FROM devices WHERE instance_id = $1 GROUP BY platform", [.text(instanceID)])
            for row in 0..<platforms.rowCount {
                if let platform = Platform(rawValue: platforms.text(row, 0)) {
                    statistics.devicesByPlatform[platform] = Int(platforms.int64(row, 1))
                }
            }
            // The partial index on invalidated devices keeps this proportional to the dead ones, not to all.
            let invalid = try connection.query(
                "SELECT count(*) FROM devices WHERE invalidated_at IS NOT NULL AND instance_id = $1",
                [.text(instanceID)])
            statistics.invalidDevices = Int(invalid.int64(0, 0))
            let states = try connection.query(
                "SELECT state, count(*) FROM publish_jobs WHERE instance_id = $1 AND created_at >= $2 GROUP BY state",
                [.text(instanceID), .millis(since)])
            for row in 0..<states.rowCount {
                if let state = PublishState(rawValue: states.text(row, 0)) {
                    statistics.publishesByState[state] = Int(states.int64(row, 1))
                }
            }
            let counters = try connection.query(
                """
                SELECT name, sum(value)::bigint FROM (
                    SELECT c.name, c.value FROM publish_jobs j JOIN publish_counters c ON c.job_id = j.id
                    WHERE j.instance_id = $1 AND j.created_at >= $2
                    UNION ALL
                    SELECT c.name, c.value
                    FROM publish_jobs j JOIN publish_shards s ON s.job_id = j.id,
                        unnest(s.counter_names, s.counter_values) AS c(name, value)
                    WHERE j.instance_id = $1 AND j.created_at >= $2
                ) AS all_counters GROUP BY name
                """, [.text(instanceID), .millis(since)])
            var rows: [String: Int64] = [:]
            for row in 0..<counters.rowCount { rows[counters.text(row, 0)] = counters.int64(row, 1) }
            statistics.counters = PublishCounters(storedNames: rows)
            return statistics
        }
    }
}
