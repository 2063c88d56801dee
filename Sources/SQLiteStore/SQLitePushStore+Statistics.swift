import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {
    /// `StatisticsSQL.statistics` in one read transaction.
    package func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try await read { connection in
            try StatisticsSQL.statistics(instanceID: instanceID, since: since, schema: .sqlite, on: connection)
        }
    }
}
