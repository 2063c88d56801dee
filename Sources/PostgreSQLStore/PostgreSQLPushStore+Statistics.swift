import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore {
    /// `StatisticsSQL.statistics` in one read transaction; a split job's counters include its open shards'.
    package func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try await read { connection in
            try StatisticsSQL.statistics(instanceID: instanceID, since: since, schema: .postgresql, on: connection)
        }
    }
}
