import Foundation
import PushStore

/// The keys, audit log, stored instances, provider tokens, quotas, statistics, invalidations and retention roles
/// written once, where their statements are the same on both backends: `APIKeySQL`'s, `AuditLogSQL`'s and the
/// others' in the backend's transactions. An instance change (PostgreSQL locks the set and NOTIFYs), a provider
/// token's swap (compare-and-swap in one statement on PostgreSQL), the invalidation log's notification and pruning,
/// and the events purge's delete (`SQLStoreBackend.deleteEvents`) stay per backend.
extension SQLStoreBackend {
    // MARK: API keys

    package func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        try await read { connection in try APIKeySQL.keys(instanceID: instanceID, on: connection) }
    }

    @discardableResult
    package func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try await write(StoreWrite(.alone, tenant: key.instanceID)) { connection in
            try APIKeySQL.insert(key, audit: audit, on: connection)
        }
    }

    package func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try await write(StoreWrite(.alone, tenant: instanceID)) { connection in
            try APIKeySQL.roll(
                instanceID: instanceID, keyID: keyID, retireAt: retireAt, replacement: replacement,
                audit: audit, on: connection)
        }
    }

    package func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try await write(StoreWrite(.alone, tenant: instanceID)) { connection in
            try APIKeySQL.revoke(instanceID: instanceID, keyID: keyID, at: at, audit: audit, on: connection)
        }
    }

    package func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws {
        guard !uses.isEmpty else { return }
        try await write(StoreWrite(.alone, cost: uses.count)) { connection in
            try APIKeySQL.recordUses(uses, on: connection)
        }
    }

    // MARK: Audit log

    package func appendAudit(_ entry: AuditEntry) async throws {
        try await write(StoreWrite(.alone, tenant: entry.instanceID)) { connection in
            try AuditLogSQL.append(entry, on: connection)
        }
    }

    package func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws
        -> [AuditEntry]
    {
        try await read { connection in
            try AuditLogSQL.entries(instanceID: instanceID, action: action, after: after, limit: limit, on: connection)
        }
    }

    package func pruneAudit(before: Date, limit: Int) async throws -> Int {
        try await write(StoreWrite(.alone)) { connection in
            try AuditLogSQL.prune(before: before, limit: limit, on: connection)
        }
    }

    // MARK: Stored instances, provider tokens

    package func storedInstances() async throws -> (version: Int64, instances: [StoredInstance]) {
        try await read { connection in try StoredInstanceSQL.instances(on: connection) }
    }

    package func storedInstancesVersion() async throws -> Int64 {
        try await read { connection in try StoredInstanceSQL.version(on: connection) }
    }

    package func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
        try await read { connection in try ProviderTokenSQL.stored(teamID: teamID, keyID: keyID, on: connection) }
    }

    // MARK: Quotas, statistics

    /// `QuotaSQL.usage` in one read transaction. On PostgreSQL every node reads the same rows, so each shows the
    /// instance's usage on all nodes.
    package func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try await read { connection in try QuotaSQL.usage(instanceID: instanceID, day: day, on: connection) }
    }

    /// `StatisticsSQL.statistics` in one read transaction; on PostgreSQL a split job's counters include its open
    /// shards'.
    package func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try await read { connection in
            try StatisticsSQL.statistics(
                instanceID: instanceID, since: since, schema: Self.publishSchema, on: connection)
        }
    }

    // MARK: Invalidations, retention

    package func invalidations(instanceID: String, after: Int64, limit: Int) async throws -> [DeviceInvalidation] {
        try await read { connection in
            try InvalidationSQL.list(instanceID: instanceID, after: after, limit: limit, on: connection)
        }
    }

    package func purge(before: Date, limit: Int) async throws -> PurgeResult {
        try await write(StoreWrite()) { connection in
            try RetentionSQL.purge(
                before: before, limit: limit, deleteEvents: Self.deleteEvents(before: before, limit: limit),
                on: connection)
        }
    }

    package func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try await write(StoreWrite()) { connection in
            try RetentionSQL.purgeUndeliveredDevices(registeredBefore: registeredBefore, limit: limit, on: connection)
        }
    }
}
