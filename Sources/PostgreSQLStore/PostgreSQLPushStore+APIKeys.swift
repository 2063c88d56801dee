import Foundation
import PushStore

extension PostgreSQLPushStore {
    static let apiKeyColumns = """
        instance_id, key_id, kind, label, scopes, secret_digest, sealed_secret, not_before, expires_at, created_at,
        last_used_at, revoked_at, rotated_from
        """

    public func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        try await read { connection in
            let result = try connection.query(
                "SELECT \(Self.apiKeyColumns) FROM api_keys WHERE instance_id = $1 ORDER BY created_at, key_id",
                [.text(instanceID)])
            return result.map { row in
                APIKeyRecord(
                    instanceID: result.text(row, 0), id: result.text(row, 1),
                    kind: APIKeyRecord.Kind(rawValue: result.text(row, 2)) ?? .scoped, label: result.text(row, 3),
                    scopes: result.text(row, 4).split(separator: " ").map(String.init),
                    secretDigest: result.optionalText(row, 5), sealedSecret: result.optionalText(row, 6),
                    notBefore: result.optionalDate(row, 7), expiresAt: result.optionalDate(row, 8),
                    createdAt: result.date(row, 9), lastUsedAt: result.optionalDate(row, 10),
                    revokedAt: result.optionalDate(row, 11), rotatedFrom: result.optionalText(row, 12))
            }
        }
    }

    @discardableResult
    public func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try await writeAlone { connection in
            guard try Self.insert(key, connection) else { return false }
            try Self.append(audit, connection)
            return true
        }
    }

    public func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try await writeAlone { connection in
            // The row lock taken here makes two concurrent rolls of one key serialise; the second sees the first's
            // expiry and still succeeds, leaving two replacements (each shown to its caller once).
            let live = try connection.query(
                "SELECT 1 FROM api_keys WHERE instance_id = $1 AND key_id = $2 AND revoked_at IS NULL FOR UPDATE",
                [.text(instanceID), .text(keyID)])
            guard live.rowCount == 1, try Self.insert(replacement, connection) else { return false }
            _ = try connection.run(
                """
                UPDATE api_keys SET expires_at = least(coalesce(expires_at, $1::bigint), $1::bigint)
                WHERE instance_id = $2 AND key_id = $3
                """, [.millis(retireAt), .text(instanceID), .text(keyID)])
            try Self.append(audit, connection)
            return true
        }
    }

    public func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try await writeAlone { connection in
            guard try connection.run(
                """
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1::bigint)
                WHERE instance_id = $2 AND key_id = $3
                """, [.millis(at), .text(instanceID), .text(keyID)]) == 1
            else { return false }
            try Self.append(audit, connection)
            return true
        }
    }

    public func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws {
        guard !uses.isEmpty else { return }
        try await writeAlone { connection in
            for use in uses {
                _ = try connection.run(
                    """
                    UPDATE api_keys SET last_used_at = greatest(coalesce(last_used_at, 0), $1::bigint)
                    WHERE instance_id = $2 AND key_id = $3
                    """, [.millis(use.at), .text(use.instanceID), .text(use.id)])
            }
        }
    }

    private static func insert(_ key: APIKeyRecord, _ connection: PGConnection) throws -> Bool {
        try connection.run(
            """
            INSERT INTO api_keys (\(apiKeyColumns))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint, $9::bigint, $10::bigint, $11::bigint, $12::bigint, $13)
            ON CONFLICT (instance_id, key_id) DO NOTHING
            """,
            [.text(key.instanceID), .text(key.id), .text(key.kind.rawValue), .text(key.label),
             .text(key.scopes.joined(separator: " ")), .text(key.secretDigest), .text(key.sealedSecret),
             .millis(key.notBefore), .millis(key.expiresAt), .millis(key.createdAt), .millis(key.lastUsedAt),
             .millis(key.revokedAt), .text(key.rotatedFrom)]) == 1
    }
}
