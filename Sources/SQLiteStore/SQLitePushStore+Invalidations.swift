import Foundation
import PushStore

extension SQLitePushStore {
    static let invalidationColumns = """
        id, instance_id, device_id, platform, token_mask, user_id, reason, status, provider_at, at
        """

    static func readInvalidation(_ row: Statement) -> DeviceInvalidation {
        DeviceInvalidation(
            id: row.int64(0), instanceID: row.text(1), deviceID: row.text(2), platform: row.text(3),
            maskedToken: row.text(4), userID: row.optionalText(5), reason: row.text(6), status: Int(row.int64(7)),
            providerTimestamp: row.optionalDate(8), at: row.date(9))
    }

    public func invalidations(instanceID: String, after: Int64, limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            var found: [DeviceInvalidation] = []
            try connection.query(
                "SELECT \(Self.invalidationColumns) FROM device_invalidations WHERE instance_id = ? AND id > ? ORDER BY id LIMIT ?",
                [.text(instanceID), .integer(after), .integer(Int64(max(0, limit)))]
            ) { found.append(Self.readInvalidation($0)) }
            return found
        }
    }

    public func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            var found: [DeviceInvalidation] = []
            try connection.query(
                "SELECT \(Self.invalidationColumns) FROM device_invalidations WHERE notified = 0 ORDER BY id LIMIT ?",
                [.integer(Int64(max(0, limit)))]
            ) { found.append(Self.readInvalidation($0)) }
            return found
        }
    }

    public func markInvalidationsNotified(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        let list = ids.map(String.init).joined(separator: ",")
        try await write { connection in
            _ = try connection.run("UPDATE device_invalidations SET notified = 1 WHERE id IN (\(list))")
        }
    }

    public func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int {
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
