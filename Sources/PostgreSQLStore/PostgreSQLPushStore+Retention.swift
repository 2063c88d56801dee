import Foundation
import PushStore
import StoreSQL

/// Retention on PostgreSQL: `RetentionSQL`'s purges, rows another node is purging skipped.
extension PostgreSQLPushStore {
    package func purge(before: Date, limit: Int) async throws -> PurgeResult {
        try await write { connection in
            try RetentionSQL.purge(
                before: before, limit: limit,
                deleteEvents: """
                    DELETE FROM events WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM events WHERE at < \(before) LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked)))
                    """, on: connection)
        }
    }

    package func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try RetentionSQL.purgeUndeliveredDevices(registeredBefore: registeredBefore, limit: limit, on: connection)
        }
    }
}
