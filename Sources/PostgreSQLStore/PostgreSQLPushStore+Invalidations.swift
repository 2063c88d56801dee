import Foundation
import PushStore

extension PostgreSQLPushStore {
    static let invalidationColumns = """
        id, instance_id, device_id, platform, token_mask, user_id, reason, status, provider_at, at
        """

    static func readInvalidations(_ result: PGResult) -> [DeviceInvalidation] {
        (0..<result.rowCount).map { row in
            DeviceInvalidation(
                id: result.int64(row, 0), instanceID: result.text(row, 1), deviceID: result.text(row, 2),
                platform: result.text(row, 3), maskedToken: result.text(row, 4), userID: result.optionalText(row, 5),
                reason: result.text(row, 6), status: Int(result.int64(row, 7)),
                providerTimestamp: result.optionalDate(row, 8), at: result.date(row, 9))
        }
    }

    public func invalidations(instanceID: String, after: Int64, limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            Self.readInvalidations(try connection.query(
                """
                SELECT \(Self.invalidationColumns) FROM device_invalidations
                WHERE instance_id = $1 AND id > $2 ORDER BY id LIMIT $3
                """, [.text(instanceID), .integer(after), .integer(Int64(max(0, limit)))]))
        }
    }

    public func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            Self.readInvalidations(try connection.query(
                "SELECT \(Self.invalidationColumns) FROM device_invalidations WHERE NOT notified ORDER BY id LIMIT $1",
                [.integer(Int64(max(0, limit)))]))
        }
    }

    public func markInvalidationsNotified(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await write { connection in
            _ = try connection.run("UPDATE device_invalidations SET notified = true WHERE id = ANY($1::bigint[])",
                                   [.integerArray(ids)])
        }
    }

    public func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int {
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
