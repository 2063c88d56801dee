import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {

    package func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            try connection.fetchAll(
                """
                SELECT \(raw: InvalidationSQL.columns) FROM device_invalidations WHERE notified = 0 ORDER BY id \
                LIMIT \(max(0, limit))
                """, InvalidationSQL.invalidation)
        }
    }

    package func markInvalidationsNotified(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        let list = ids.map(String.init).joined(separator: ",")
        try await write { connection in
            _ = try connection.run("UPDATE device_invalidations SET notified = 1 WHERE id IN (\(list))")
        }
    }

    package func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int {
        let limit = Int64(max(0, limit))
        return try await write { connection in
            let old = try connection.run(
                """
                DELETE FROM device_invalidations WHERE id IN (
                    SELECT id FROM device_invalidations WHERE at < ? ORDER BY at LIMIT ?)
                """, [.millis(before), .integer(limit)])
            // Over the cap: each instance's rows older than its newest `keepPerInstance`.
            let capped = try connection.run(
                """
                DELETE FROM device_invalidations WHERE id IN (
                    SELECT id FROM (
                        SELECT id, row_number() OVER (PARTITION BY instance_id ORDER BY id DESC) AS n
                        FROM device_invalidations)
                    WHERE n > ? LIMIT ?)
                """, [.integer(Int64(max(0, keepPerInstance))), .integer(limit)])
            return old + capped
        }
    }
}
