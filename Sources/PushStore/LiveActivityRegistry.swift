import Foundation

/// Live Activity tokens of devices (docs/API.md "Live Activities"): per device, one push-to-start token per
/// attributes type and one update token per running activity, each a row tied to the device (deleting the device
/// deletes its rows). Publishes with `x_live_activity` stream these rows as their targets.
package protocol LiveActivityRegistry: Sendable {
    /// Stores the device's push-to-start token for `attributesType`, replacing the one it had (tokens rotate).
    /// - Returns: `.deviceNotFound` unless the instance has an APNs device `deviceID`; `.limitReached` for a new
    ///   attributes type when the device has `limits.maxStartTokensPerDevice` already.
    func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult
    /// Stores the update token of the device's activity `activityID` (upsert per device and activity: the token
    /// rotates mid-activity), with its attributes type, reference and expiry.
    /// - Returns: as `putLiveActivityStartToken`, the bound being `limits.maxActivitiesPerDevice` unexpired rows.
    func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult
    /// Deletes the device's start token of `attributesType` (kind `.start`) or its activity `activityID`'s update
    /// token (kind `.update`; `name` is the activity id). - Returns: nil when the instance has no such APNs device,
    /// else whether a row existed.
    func deleteLiveActivityToken(instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String)
        async throws -> Bool?
    /// The device's rows, start tokens first, each kind in name order (expired ones included until purged).
    /// - Returns: nil when the instance has no such APNs device.
    func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]?
    /// The next `limit` Live Activity targets of `job` with `ref > cursor`, in `ref` order: rows of `selector`'s
    /// kind and attributes type (and activity, when it names one), unexpired at `now`, of valid devices that follow
    /// one of the job's interests or belong to one of its users. `Target.ref` is the row's own key, `token` its
    /// token, `lastRegisteredAt` when the row was last stored; environment and user are the device's.
    func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int,
        now: Date
    ) async throws -> TargetPage
    /// Deletes rows APNs said are dead (410, BadDeviceToken), each only if it was not stored again at or after its
    /// evidence time (a rotated token keeps its row). - Returns: how many were deleted.
    func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int
    /// Deletes up to `limit` rows whose `expiresAt` is before `before`. - Returns: how many.
    func purgeExpiredLiveActivityTokens(before: Date, limit: Int) async throws -> Int
}

/// Per-device bounds on Live Activity rows (config `limits.liveActivity…`).
package struct LiveActivityLimits: Sendable, Equatable {
    /// Start tokens (attributes types) one device may hold.
    package var maxStartTokensPerDevice: Int
    /// Unexpired activity update tokens one device may hold.
    package var maxActivitiesPerDevice: Int

    package init(maxStartTokensPerDevice: Int = 16, maxActivitiesPerDevice: Int = 16) {
        self.maxStartTokensPerDevice = maxStartTokensPerDevice
        self.maxActivitiesPerDevice = maxActivitiesPerDevice
    }
}

/// What storing a Live Activity token did.
package enum LiveActivityPutResult: Sendable, Equatable {
    /// Stored; `created` is false when an existing row was replaced.
    case stored(created: Bool)
    /// The instance has no APNs device with that id.
    case deviceNotFound
    /// The device holds its bound of rows of that kind already (the bound is given).
    case limitReached(Int)
}

/// Which rows a Live Activity publish targets.
package struct LiveActivitySelector: Sendable, Equatable {
    /// `.start` for `event: start`, `.update` for update and end.
    package var kind: LiveActivityToken.Kind
    package var attributesType: String
    /// Update and end: only this activity; nil for every running activity of the type.
    package var activityID: String?

    package init(kind: LiveActivityToken.Kind, attributesType: String, activityID: String? = nil) {
        self.kind = kind
        self.attributesType = attributesType
        self.activityID = activityID
    }
}

/// A row APNs declared dead: delete it unless it was stored again at or after `since`.
package struct LiveActivityTokenDeath: Sendable, Equatable {
    /// `Target.ref` of the row.
    package var ref: Int64
    package var since: Date

    package init(ref: Int64, since: Date) {
        self.ref = ref
        self.since = since
    }
}
