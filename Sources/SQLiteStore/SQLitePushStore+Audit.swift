import Foundation
import PushStore
import StoreSQL

/// The audit log on SQLite: the statements are `AuditLogSQL`'s.
extension SQLitePushStore {
    package func appendAudit(_ entry: AuditEntry) async throws {
        try await write(tenant: entry.instanceID) { connection in try AuditLogSQL.append(entry, on: connection) }
    }

    package func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws
        -> [AuditEntry]
    {
        try await read { connection in
            try AuditLogSQL.entries(instanceID: instanceID, action: action, after: after, limit: limit, on: connection)
        }
    }

    package func pruneAudit(before: Date, limit: Int) async throws -> Int {
        try await write { connection in try AuditLogSQL.prune(before: before, limit: limit, on: connection) }
    }

    /// Appends `entry` inside the caller's transaction (nothing when nil).
    static func append(_ entry: AuditEntry?, _ connection: SQLiteConnection) throws {
        try AuditLogSQL.append(entry, on: connection)
    }
}
