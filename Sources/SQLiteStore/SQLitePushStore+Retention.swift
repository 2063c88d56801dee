import Foundation
import PushStore
import StoreSQL

/// Retention on SQLite: `RetentionSQL`'s purges on the writer.
extension SQLitePushStore {
    package func purge(before: Date, limit: Int) async throws -> PurgeResult {
        try await write { connection in
            try RetentionSQL.purge(
                before: before, limit: limit,
                deleteEvents: """
                    DELETE FROM events WHERE (instance_id, publish_id, kind, device_id) IN (
                        SELECT instance_id, publish_id, kind, device_id FROM events WHERE at < \(before) \
                    LIMIT \(max(0, limit)))
                    """, on: connection)
        }
    }

    package func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try RetentionSQL.purgeUndeliveredDevices(registeredBefore: registeredBefore, limit: limit, on: connection)
        }
    }
}
