import Foundation
import PushStore

extension SQLitePushStore {
    static let apiKeyColumns = """
        instance_id, key_id, kind, label, scopes, secret_digest, sealed_secret, not_before, expires_at, created_at,
        last_used_at, revoked_at, rotated_from
        """

    public func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        try await read { connection in
            var keys: [APIKeyRecord] = []
            try connection.query(
                "SELECT \(Self.apiKeyColumns) FROM api_keys WHERE instance_id = ? ORDER BY created_at, key_id",
                [.text(instanceID)]
            ) { row in
                keys.append(APIKeyRecord(
                    instanceID: row.text(0), id: row.text(1), kind: APIKeyRecord.Kind(rawValue: row.text(2)) ?? .scoped,
                    label: row.text(3), scopes: row.text(4).split(separator: " ").map(String.init),
                    secretDigest: row.optionalText(5), sealedSecret: row.optionalText(6), notBefore: row.optionalDate(7),
                    expiresAt: row.optionalDate(8), createdAt: row.date(9), lastUsedAt: row.optionalDate(10),
                    revokedAt: row.optionalDate(11), rotatedFrom: row.optionalText(12)))
            }
            return keys
        }
    }

    @discardableResult
    public func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try await write(tenant: key.instanceID) { connection in
            guard try Self.insert(key, connection) else { return false }
            try Self.append(audit, connection)
            return true
        }
    }

    public func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            // Checked before anything is written, so a refused roll changes nothing (the body never throws midway).
            let live = try connection.first(
                "SELECT 1 FROM api_keys WHERE instance_id = ? AND key_id = ? AND revoked_at IS NULL",
                [.text(instanceID), .text(keyID)]) { _ in true } ?? false
            guard live, try Self.insert(replacement, connection) else { return false }
            _ = try connection.run(
                """
                UPDATE api_keys SET expires_at = min(coalesce(expires_at, ?1), ?1)
                WHERE instance_id = ?2 AND key_id = ?3
                """, [.millis(retireAt), .text(instanceID), .text(keyID)])
            try Self.append(audit, connection)
            return true
        }
    }

    public func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            guard try connection.run(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE instance_id = ? AND key_id = ?",
                [.millis(at), .text(instanceID), .text(keyID)]) == 1
            else { return false }
            try Self.append(audit, connection)
            return true
        }
    }

    public func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws {
        guard !uses.isEmpty else { return }
        try await write(cost: uses.count) { connection in
            for use in uses {
                _ = try connection.run(
                    """
                    UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?)
                    WHERE instance_id = ? AND key_id = ?
                    """, [.millis(use.at), .text(use.instanceID), .text(use.id)])
            }
        }
    }

    private static func insert(_ key: APIKeyRecord, _ connection: SQLiteConnection) throws -> Bool {
        try connection.run(
            """
            INSERT INTO api_keys (\(apiKeyColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (instance_id, key_id) DO NOTHING
            """,
            [.text(key.instanceID), .text(key.id), .text(key.kind.rawValue), .text(key.label),
             .text(key.scopes.joined(separator: " ")), .text(key.secretDigest), .text(key.sealedSecret),
             .millis(key.notBefore), .millis(key.expiresAt), .millis(key.createdAt), .millis(key.lastUsedAt),
             .millis(key.revokedAt), .text(key.rotatedFrom)]) == 1
    }
}
