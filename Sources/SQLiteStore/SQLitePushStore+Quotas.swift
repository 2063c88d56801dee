import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore: QuotaUsageReading {
    /// `QuotaSQL.usage` in one read transaction.
    package func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try await read { connection in try QuotaSQL.usage(instanceID: instanceID, day: day, on: connection) }
    }
}
