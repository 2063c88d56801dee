import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore {

    package func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            try connection.fetchAll(
                """
                SELECT \(raw: InvalidationSQL.columns) FROM device_invalidations WHERE NOT notified ORDER BY id \
                LIMIT \(max(0, limit))
                """, InvalidationSQL.invalidation)
        }
    }

    package func markInvalidationsNotified(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await write { connection in
            _ = try connection.run(
                "UPDATE device_invalidations SET notified = true WHERE id = ANY($1::bigint[])",
                [.integerArray(ids)])
        }
    }

    package func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int {
        let limit = PGValue.integer(Int64(max(0, limit)))
        return try await write { connection in
            let old = try connection.run(
                """
                DELETE FROM device_invalidations WHERE id IN (
                    SELECT id FROM device_invalidations WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
                """, [.millis(before), limit])
            // Over the cap: each instance's rows older than its newest `keepPerInstance`.
            let capped = try connection.run(
                """
                DELETE FROM device_invalidations WHERE id IN (
                    SELECT id FROM (
                        SELECT id, row_number() OVER (PARTITION BY instance_id ORDER BY id DESC) AS n
                        FROM device_invalidations) ranked
                    WHERE n > $1 LIMIT $2)
                """, [.integer(Int64(max(0, keepPerInstance))), limit])
            return old + capped
        }
    }
}
