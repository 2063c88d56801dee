import Foundation
import PushStore
import SQL

/// The `api_keys` statements, the same on SQLite and PostgreSQL; each runs inside the caller's transaction, with
/// the audit entry of the change appended in it.
package enum APIKeySQL {
    static let columns = """
        instance_id, key_id, kind, label, scopes, secret_digest, sealed_secret, not_before, expires_at, created_at, \
        last_used_at, revoked_at, rotated_from
        """

    /// An instance's keys, oldest first.
    package static func keys(instanceID: String, on connection: some SQLConnection) throws -> [APIKeyRecord] {
        try connection.fetchAll(
            """
            SELECT \(raw: columns) FROM api_keys WHERE instance_id = \(instanceID) ORDER BY created_at, key_id
            """
        ) { row in
            APIKeyRecord(
                instanceID: try row.decode("instance_id"), id: try row.decode("key_id"),
                kind: APIKeyRecord.Kind(rawValue: try row.decode("kind")) ?? .scoped, label: try row.decode("label"),
                scopes: try row.decode("scopes", as: String.self).split(separator: " ").map(String.init),
                secretDigest: try row.decode("secret_digest"), sealedSecret: try row.decode("sealed_secret"),
                notBefore: try row.optionalDate("not_before"), expiresAt: try row.optionalDate("expires_at"),
                createdAt: try row.date("created_at"), lastUsedAt: try row.optionalDate("last_used_at"),
                revokedAt: try row.optionalDate("revoked_at"), rotatedFrom: try row.decode("rotated_from"))
        }
    }

    /// Stores `key` unless one with its id exists; false then, and nothing (no audit entry either) is written.
    package static func insert(_ key: APIKeyRecord, audit: AuditEntry?, on connection: some SQLConnection) throws
        -> Bool
    {
        guard try insert(key, on: connection) else { return false }
        try AuditLogSQL.append(audit, on: connection)
        return true
    }

    /// Stores `replacement` and retires the live key `keyID` at `retireAt` (or its own earlier expiry); false when
    /// that key is missing or revoked, or the replacement's id is taken, and then nothing is written.
    package static func roll(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?,
        on connection: some SQLConnection
    ) throws -> Bool {
        // Checked before anything is written, so a refused roll changes nothing. On PostgreSQL the row lock makes
        // two concurrent rolls of one key serialise; the second sees the first's expiry and still succeeds, leaving
        // two replacements (each shown to its caller once). SQLite's one writer serialises them already.
        let live =
            try connection.fetchOne(
                """
                SELECT 1 FROM api_keys WHERE instance_id = \(instanceID) AND key_id = \(keyID) AND revoked_at IS NULL \
                \(lock: .forUpdate)
                """
            ) { _ in true } ?? false
        guard live, try insert(replacement, on: connection) else { return false }
        try connection.perform(
            """
            UPDATE api_keys SET expires_at = \(function: .least)(coalesce(expires_at, \(retireAt)), \(retireAt))
            WHERE instance_id = \(instanceID) AND key_id = \(keyID)
            """)
        try AuditLogSQL.append(audit, on: connection)
        return true
    }

    /// Revokes `keyID` (keeping the first revocation time); false when there is no such key.
    package static func revoke(
        instanceID: String, keyID: String, at: Date, audit: AuditEntry?, on connection: some SQLConnection
    ) throws -> Bool {
        guard
            try connection.perform(
                """
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, \(at))
                WHERE instance_id = \(instanceID) AND key_id = \(keyID)
                """) == 1
        else { return false }
        try AuditLogSQL.append(audit, on: connection)
        return true
    }

    /// Moves each key's last use forward to the use's time (never back).
    package static func recordUses(_ uses: [APIKeyUse], on connection: some SQLConnection) throws {
        for use in uses {
            try connection.perform(
                """
                UPDATE api_keys SET last_used_at = \(function: .greatest)(coalesce(last_used_at, 0), \(use.at))
                WHERE instance_id = \(use.instanceID) AND key_id = \(use.id)
                """)
        }
    }

    private static func insert(_ key: APIKeyRecord, on connection: some SQLConnection) throws -> Bool {
        try connection.perform(
            """
            INSERT INTO api_keys (\(raw: columns))
            VALUES (\(key.instanceID), \(key.id), \(key.kind.rawValue), \(key.label), \
            \(key.scopes.joined(separator: " ")), \(key.secretDigest), \(key.sealedSecret), \(key.notBefore), \
            \(key.expiresAt), \(key.createdAt), \(key.lastUsedAt), \(key.revokedAt), \(key.rotatedFrom))
            \(upsert: ["instance_id", "key_id"])
            """) == 1
    }
}
