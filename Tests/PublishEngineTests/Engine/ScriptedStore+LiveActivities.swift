import Foundation
import PublishEngine
import PushStore

/// The engine's store role includes the Live Activity registry: forwarded to the shared in-memory store unscripted.
extension ScriptedStore: LiveActivityRegistry {
    func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult {
        try await base.putLiveActivityStartToken(
            instanceID: instanceID, deviceID: deviceID, attributesType: attributesType,
            token: token, limits: limits, now: now)
    }

    func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult {
        try await base.putLiveActivityUpdateToken(
            instanceID: instanceID, deviceID: deviceID, activityID: activityID, attributesType: attributesType,
            token: token, reference: reference, expiresAt: expiresAt, limits: limits, now: now)
    }

    func deleteLiveActivityToken(instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String)
        async throws -> Bool?
    {
        try await base.deleteLiveActivityToken(instanceID: instanceID, deviceID: deviceID, kind: kind, name: name)
    }

    func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]? {
        try await base.liveActivityTokens(instanceID: instanceID, deviceID: deviceID)
    }

    func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int,
        now: Date
    ) async throws -> TargetPage {
        try await base.liveActivityTargets(for: job, selector: selector, after: cursor, limit: limit, now: now)
    }

    func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int {
        try await base.deleteDeadLiveActivityTokens(deaths)
    }

    func purgeExpiredLiveActivityTokens(before: Date, limit: Int) async throws -> Int {
        try await base.purgeExpiredLiveActivityTokens(before: before, limit: limit)
    }
}
