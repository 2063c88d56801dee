import Foundation
import PushStore

extension InMemoryState {
    struct StoredLiveActivity {
        var ref: Int64
        var deviceRef: Int64
        var token: LiveActivityToken
    }

    /// The ref of the instance's APNs device `deviceID`.
    func apnsDeviceRef(instanceID: String, deviceID: String) -> Int64? {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), devices[ref]?.device.platform == .apns else {
            return nil
        }
        return ref
    }

    /// The device's rows go with it (the SQL backends' ON DELETE CASCADE).
    mutating func removeLiveActivities(ofDevice ref: Int64) {
        liveActivities = liveActivities.filter { $0.value.deviceRef != ref }
    }

    mutating func putLiveActivity(
        instanceID: String, deviceID: String, token: LiveActivityToken, bound: Int, now: Date
    ) throws -> LiveActivityPutResult {
        guard let deviceRef = apnsDeviceRef(instanceID: instanceID, deviceID: deviceID) else { return .deviceNotFound }
        let mine = liveActivities.values.filter { $0.deviceRef == deviceRef && $0.token.kind == token.kind }
        let existing = mine.first { row in
            token.kind == .start
                ? row.token.attributesType == token.attributesType : row.token.activityID == token.activityID
        }
        if let existing {
            var row = existing
            row.token.token = token.token
            row.token.attributesType = token.attributesType
            row.token.reference = token.reference
            row.token.expiresAt = token.expiresAt
            row.token.updatedAt = now
            liveActivities[row.ref] = row
            return .stored(created: false)
        }
        let live = mine.filter { $0.token.expiresAt.map { $0 > now } ?? true }
        guard live.count < bound else { return .limitReached(bound) }
        try requireRoom(for: 1)
        for row in mine where !live.contains(where: { $0.ref == row.ref }) { liveActivities[row.ref] = nil }
        lastLiveActivityRef += 1
        var stored = token
        stored.deviceID = deviceID
        stored.createdAt = now
        stored.updatedAt = now
        liveActivities[lastLiveActivityRef] = StoredLiveActivity(
            ref: lastLiveActivityRef, deviceRef: deviceRef, token: stored)
        return .stored(created: true)
    }

    mutating func deleteLiveActivity(instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String)
        -> Bool?
    {
        guard let deviceRef = apnsDeviceRef(instanceID: instanceID, deviceID: deviceID) else { return nil }
        let match = liveActivities.values.first { row in
            row.deviceRef == deviceRef && row.token.kind == kind
                && (kind == .start ? row.token.attributesType : row.token.activityID) == name
        }
        guard let match else { return false }
        liveActivities[match.ref] = nil
        return true
    }

    func liveActivityTokens(instanceID: String, deviceID: String) -> [LiveActivityToken]? {
        guard let deviceRef = apnsDeviceRef(instanceID: instanceID, deviceID: deviceID) else { return nil }
        return liveActivities.values.filter { $0.deviceRef == deviceRef }.map(\.token).sorted { a, b in
            if a.kind != b.kind { return a.kind == .start }
            return (a.activityID ?? a.attributesType) < (b.activityID ?? b.attributesType)
        }
    }

    func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int,
        now: Date
    ) -> TargetPage {
        let limit = max(1, limit)
        let wanted = Set(job.targets)
        let rows = liveActivities.values.filter { row in
            guard row.ref > cursor, row.token.kind == selector.kind,
                row.token.attributesType == selector.attributesType,
                selector.activityID == nil || row.token.activityID == selector.activityID,
                row.token.expiresAt.map({ $0 > now }) ?? true,
                let stored = devices[row.deviceRef], stored.device.instanceID == job.instanceID,
                stored.device.invalidatedAt == nil
            else { return false }
            switch job.kind {
            case .interests: return !stored.interests.isDisjoint(with: wanted)
            case .users: return stored.device.userID.map(wanted.contains) ?? false
            case .channels: return false
            }
        }.sorted { $0.ref < $1.ref }
        let targets = rows.prefix(limit).compactMap { row -> Target? in
            guard let device = devices[row.deviceRef]?.device else { return nil }
            return Target(
                ref: row.ref, deviceID: device.id, platform: .apns, token: row.token.token,
                environment: device.environment, environmentDeclared: device.environmentDeclared,
                lastRegisteredAt: row.token.updatedAt, userID: device.userID, timeZone: device.timeZone)
        }
        return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: rows.count <= limit)
    }

    mutating func deleteDeadLiveActivities(_ deaths: [LiveActivityTokenDeath]) -> Int {
        var deleted = 0
        for death in deaths {
            if let row = liveActivities[death.ref], row.token.updatedAt < death.since {
                liveActivities[death.ref] = nil
                deleted += 1
            }
        }
        return deleted
    }

    mutating func purgeExpiredLiveActivities(before: Date, limit: Int) -> Int {
        let expired = liveActivities.values.filter { $0.token.expiresAt.map { $0 < before } ?? false }
            .map(\.ref).sorted().prefix(max(0, limit))
        for ref in expired { liveActivities[ref] = nil }
        return expired.count
    }
}
