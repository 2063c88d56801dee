import Foundation
import PushStore

extension InMemoryPushStore {
    package func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        try access { $0.apiKeys[instanceID] ?? [] }
    }

    @discardableResult
    package func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try access { state in
            guard try state.insertAPIKey(key) else { return false }
            state.appendAudit(audit)
            return true
        }
    }

    package func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try access { state in
            guard let index = state.apiKeys[instanceID]?.firstIndex(where: { $0.id == keyID }),
                state.apiKeys[instanceID]?[index].revokedAt == nil, try state.insertAPIKey(replacement)
            else { return false }
            let retire = retireAt.stored
            let current = state.apiKeys[instanceID]?[index].expiresAt ?? retire
            state.apiKeys[instanceID]?[index].expiresAt = min(current, retire)
            state.appendAudit(audit)
            return true
        }
    }

    package func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try access { state in
            guard let index = state.apiKeys[instanceID]?.firstIndex(where: { $0.id == keyID }) else { return false }
            if state.apiKeys[instanceID]?[index].revokedAt == nil {
                state.apiKeys[instanceID]?[index].revokedAt = at.stored
            }
            state.appendAudit(audit)
            return true
        }
    }

    package func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws {
        try access { state in
            for use in uses {
                guard let index = state.apiKeys[use.instanceID]?.firstIndex(where: { $0.id == use.id }) else {
                    continue
                }
                let at = use.at.stored
                let last = state.apiKeys[use.instanceID]?[index].lastUsedAt ?? at
                state.apiKeys[use.instanceID]?[index].lastUsedAt = max(last, at)
            }
        }
    }
}

extension InMemoryState {
    /// Adds `key` (times at the backends' millisecond precision) unless its id is taken.
    mutating func insertAPIKey(_ key: APIKeyRecord) throws -> Bool {
        if apiKeys[key.instanceID]?.contains(where: { $0.id == key.id }) == true { return false }
        try requireRoom(for: 1)
        var stored = key
        stored.notBefore = key.notBefore?.stored
        stored.expiresAt = key.expiresAt?.stored
        stored.createdAt = key.createdAt.stored
        stored.lastUsedAt = key.lastUsedAt?.stored
        stored.revokedAt = key.revokedAt?.stored
        apiKeys[key.instanceID, default: []].append(stored)
        return true
    }
}
