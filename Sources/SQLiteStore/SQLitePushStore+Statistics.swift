import Foundation
import PushStore

extension SQLitePushStore {
    public func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try await read { connection in
            var statistics = InstanceStatistics()
            // The (instance_id, platform, token) unique index covers this count: no table rows are read.
            try connection.query(
                "SELECT platform, count(*) FROM devices WHERE instance_id = ? GROUP BY platform", [.text(instanceID)]
            ) { row in
                if let platform = Platform(rawValue: row.text(0)) {
                    statistics.devicesByPlatform[platform] = Int(row.int64(1))
                }
            }
            // The partial index on invalidated devices keeps this proportional to the dead ones, not to all.
            statistics.invalidDevices = Int(
                try connection.first(
                    """
                    SELECT count(*) FROM devices INDEXED BY devices_invalidated
                    WHERE invalidated_at IS NOT NULL AND instance_id = ?
                    """, [.text(instanceID)]
                ) { $0.int64(0) } ?? 0)
            try connection.query(
                "SELECT COALESCE(ended_as, state), count(*) FROM publish_jobs WHERE instance_id = ? AND created_at >= ? GROUP BY 1",
                [.text(instanceID), .millis(since)]
            ) { row in
                if let state = PublishState(rawValue: row.text(0)) {
                    statistics.publishesByState[state] = Int(row.int64(1))
                }
            }
            var counters: [String: Int64] = [:]
            try connection.query(
                """
                SELECT c.name, sum(c.value) FROM publish_jobs j JOIN publish_counters c ON c.job_id = j.id
                WHERE j.instance_id = ? AND j.created_at >= ? GROUP BY c.name
                """, [.text(instanceID), .millis(since)]
            ) { row in
                counters[row.text(0)] = row.int64(1)
            }
            statistics.counters = PublishCounters(storedNames: counters)
            return statistics
        }
    }
}
