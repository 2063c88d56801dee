import Foundation
import PushStore
import StoreSQL

/// The key store on PostgreSQL: the statements are `APIKeySQL`'s, each write in a transaction of its own.
extension PostgreSQLPushStore {
    package func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        try await read { connection in try APIKeySQL.keys(instanceID: instanceID, on: connection) }
    }

    @discardableResult
    package func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try await writeAlone { connection in try APIKeySQL.insert(key, audit: audit, on: connection) }
    }

    package func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try await writeAlone { connection in
            try APIKeySQL.roll(
                instanceID: instanceID, keyID: keyID, retireAt: retireAt, replacement: replacement,
                audit: audit, on: connection)
        }
    }

    package func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try await writeAlone { connection in
            try APIKeySQL.revoke(instanceID: instanceID, keyID: keyID, at: at, audit: audit, on: connection)
        }
    }

    package func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws {
        guard !uses.isEmpty else { return }
        try await writeAlone { connection in try APIKeySQL.recordUses(uses, on: connection) }
    }
}
