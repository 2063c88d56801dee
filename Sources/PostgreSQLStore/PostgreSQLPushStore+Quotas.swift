import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore: QuotaUsageReading {
    /// `QuotaSQL.usage` in one read transaction. Every node reads the same rows, so each shows the instance's usage
    /// on all nodes.
    package func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try await read { connection in try QuotaSQL.usage(instanceID: instanceID, day: day, on: connection) }
    }
}
