import Foundation
import PushStore

/// The Live Activity tokens written once: `LiveActivitySQL`'s statements in the backend's transactions. The target
/// page of a Live Activity publish stays per backend (`json_each` on SQLite, `= ANY` on PostgreSQL).
extension SQLStoreBackend {
    package func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult {
        try await write(StoreWrite()) { connection in
            try LiveActivitySQL.putStartToken(
                instanceID: instanceID, deviceID: deviceID, attributesType: attributesType,
                token: token, limits: limits, now: now, on: connection)
        }
    }

    package func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult {
        try await write(StoreWrite()) { connection in
            try LiveActivitySQL.putUpdateToken(
                instanceID: instanceID, deviceID: deviceID, activityID: activityID, attributesType: attributesType,
                token: token, reference: reference, expiresAt: expiresAt, limits: limits, now: now, on: connection)
        }
    }

    package func deleteLiveActivityToken(
        instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String
    ) async throws -> Bool? {
        try await write(StoreWrite()) { connection in
            try LiveActivitySQL.delete(
                instanceID: instanceID, deviceID: deviceID, kind: kind, name: name, on: connection)
        }
    }

    package func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int {
        guard !deaths.isEmpty else { return 0 }
        return try await write(StoreWrite()) { connection in try LiveActivitySQL.deleteDead(deaths, on: connection) }
    }

    package func purgeExpiredLiveActivityTokens(before: Date, limit: Int) async throws -> Int {
        try await write(StoreWrite()) { connection in
            try LiveActivitySQL.purgeExpired(before: before, limit: limit, on: connection)
        }
    }

    package func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]? {
        try await read { connection in
            try LiveActivitySQL.tokens(instanceID: instanceID, deviceID: deviceID, on: connection)
        }
    }
}
