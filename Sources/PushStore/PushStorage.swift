import Foundation

/// Everything the server stores, as one type: the composition of the narrow roles below. A backend implements all
/// of them and the application wires it; each component takes only the roles it uses (the engine a `PublishQueue`
/// and a `DeliveryResultStore`, the device API a `DeviceRegistry`, …), so a fake for one role is small and a second
/// backend is checked role by role by the contract suite (`Tests/PushStoreTests/Contract`).
///
/// Backend-neutral (a PostgreSQL backend will follow): only Swift value types cross it. Every call is `async`
/// and never blocks the Swift concurrency pool. Writes return after they are committed. All device and publish
/// operations are scoped by instance id.
///
/// The publish engine's loop, for one claimed job:
/// ```swift
/// guard let claimed = try await store.claimJob(workerID: me, leaseDuration: .seconds(60), now: now()) else { … }
/// var cursor = claimed.cursor                  // resume point after a crash
/// var page: TargetPage
/// repeat {
///     page = try await store.targets(for: claimed.job, after: cursor, limit: 1000)
///     // send page.targets; once every target up to some ref has a final result:
///     try await store.checkpoint(claimed.id, workerID: me, cursor: doneUpTo, counters: ["accepted": n],
///                                deviceResults: results)   // also renewLease now and then
///     cursor = page.cursor
/// } while !page.isLast
/// try await store.finishJob(claimed.id, workerID: me, state: .finished, targetsTotal: total, summary: nil, now: now())
/// ```
/// A `PushStoreError.leaseLost` from any of these means another worker owns the job now: stop sending for it.
///
/// Any call may throw `StoreUnavailableError` when the backend cannot work right now (a full disk, an I/O error,
/// a read-only file system, a lock held too long): nothing of that call was stored, and it may succeed later.
package typealias PushStorage = DeviceRegistry & PublishQueue & DeliveryResultStore & EventStore & WebhookQueue
    & ProviderTokenStorage & RetentionStore & StoreBackend & LiveActivityRegistry & InvalidationLog
    & APIKeyStore & AuditLog & InstanceDefinitionStore

/// The device registry: devices per (instance, platform, token), their interests and their user bindings.
package protocol DeviceRegistry: Sendable {
    /// Registers a device, idempotently per (instance, platform, token): the same token keeps its device id,
    /// interests and user; `lastRegisteredAt`, bundle id and metadata are updated, the environment only if
    /// declared, and an invalidated device becomes valid again.
    /// - Throws: `PushStoreError.deviceLimitReached` for a new token when the instance already holds
    ///   `maxDevicesPerInstance` devices (a known token always re-registers).
    func registerDevice(_ registration: DeviceRegistration, maxDevicesPerInstance: Int) async throws -> RegisteredDevice
    /// Registers many devices in one transaction (same rules as `registerDevice`), in order.
    func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice]
    func device(instanceID: String, id: String) async throws -> Device?
    /// The device's internal key (`Target.ref`, what `DeviceResult.device` names), for a result recorded outside a
    /// publish (the console's test push); nil when no such device exists.
    func deviceRef(instanceID: String, id: String) async throws -> Int64?
    func device(instanceID: String, platform: Platform, token: String) async throws -> Device?
    /// Deletes the device with its interests and user binding. - Returns: whether it existed.
    func deleteDevice(instanceID: String, id: String) async throws -> Bool
    /// - Returns: `false` when the device does not exist.
    func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool
    /// Sets (or, with nil, clears) the device's time zone, an IANA name the caller validated. Registration keeps
    /// it. - Returns: `false` when the device does not exist.
    func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool
    /// Gives the device of `platform` a new token (an FCM token refresh), keeping its id, interests and user, and
    /// makes it valid again. Another device of the instance and platform that holds `token` already (the same
    /// phone registered again after a reinstall) is deleted, with its interests and user binding, in the same
    /// transaction: the phone then gets each notification once. That happens only when the holder is invalidated,
    /// bound to no user, or bound to the same user as `deviceID`.
    /// - Returns: `false` when the instance has no device `deviceID` of `platform` (nothing changes then).
    /// - Throws: `PushStoreError.tokenHeldByAnotherUser` when a live holder is bound to another user (or to a user
    ///   while `deviceID` is bound to none); nothing changes then.
    func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws -> Bool

    // MARK: Interests

    /// The device's interests sorted by name, `limit` per page, after `cursor` (from the previous page).
    /// - Returns: `nil` when the device does not exist.
    func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) async throws -> InterestPage?
    /// Replaces the device's interests (duplicates ignored; the caller enforces the 5000 limit). Interests no
    /// device follows any more are deleted (by every operation that drops a follower, device deletions included).
    /// - Returns: `false` when the device does not exist.
    /// - Throws: `PushStoreError.subscriptionLimitReached` / `.interestLimitReached` when the write would take the
    ///   instance over `limits` (see `InterestLimits.violation`); nothing changes then.
    func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits) async throws
        -> Bool
    /// - Returns: `false` when the device does not exist. Adding a followed interest is a no-op.
    /// - Throws: as `setInterests`.
    func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits) async throws
        -> Bool
    /// - Returns: `false` when the device does not exist. Removing an unfollowed interest is a no-op.
    func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool
    /// Valid (not invalidated) devices following `interest`.
    func subscriberCount(instanceID: String, interest: String) async throws -> Int

    // MARK: Users

    /// Binds the device to `userID` unless it belongs to another user or the user already has
    /// `maxDevicesPerUser` valid devices. The same user again is `.ok`.
    func setUser(instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int) async throws
        -> SetUserResult
    /// Deletes every device of the user (with their interests) and appends `audit` in the same transaction.
    /// - Returns: how many.
    func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int
    /// The user's devices (invalidated ones included), oldest first.
    func devices(instanceID: String, userID: String) async throws -> [Device]
}

/// The durable publish queue: jobs committed before the publish is answered, leased to workers, streamed as
/// pages of targets and checkpointed (see the loop above).
package protocol PublishQueue: Sendable {
    /// Durably queues a publish: returns only after the job is committed.
    /// - Throws: `PushStoreError.duplicatePublish` when the instance already has this publish id.
    func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID
    /// Leases a job that is queued, or running with an expired lease (a crashed worker's job), to `workerID` until
    /// `now + leaseDuration`: of the instances `preference` admits, one with the fewest runs on the claiming node,
    /// and its oldest job. Jobs leased by live workers are skipped, so several workers (or one engine claiming
    /// several jobs) run jobs side by side. - Returns: `nil` when nothing is claimable.
    func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference) async throws
        -> ClaimedJob?
    /// Extends the lease. - Returns: whether `cancelPublish` marked the job meanwhile (`cancelRequested`): the
    /// holder must stop it and end it `.cancelled`. This is how a run learns of a cancel made on another node.
    /// - Throws: `PushStoreError.leaseLost` when `workerID` no longer holds it.
    @discardableResult
    func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws -> Bool
    /// The next `limit` targets with `ref > cursor`, in `ref` order, each device once, invalidated devices skipped.
    /// Reads pages lazily from indexes; never loads every subscriber.
    func targets(for job: PublishJob, after cursor: Int64, limit: Int) async throws -> TargetPage
    /// In one transaction: advances the job's cursor (never backwards), adds `counters` to the job's counters,
    /// records `deviceResults`, remembers `answered` targets above the cursor (answers arrive out of order) and
    /// forgets remembered ones the cursor has passed. - Throws: `PushStoreError.leaseLost` when `workerID` no longer
    /// holds the job.
    func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws
    /// Targets above the job's cursor that already have a recorded answer: a resumed run skips them.
    func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64>
    /// Ends the job (`.finished`, `.failed`, `.cancelled` or `.expired`). - Throws: `PushStoreError.leaseLost`.
    func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) async throws
    func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus?
    /// The publish's counters as `publishStatus` reports them (`PublishStatus.counters`), empty when there is no
    /// such publish: what a run's summary needs, without the rest of the status.
    func publishCounters(instanceID: String, publishID: String) async throws -> PublishCounters
    /// Newest first.
    func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus]
    /// Jobs not yet finished (queued or running).
    func queueDepth() async throws -> Int

    // MARK: Scheduling and cancelling

    /// The earliest `notBefore` of a queued job that is not yet claimable at `now` (a scheduled publish), nil when
    /// there is none: the engine arms a timer for it instead of polling.
    func nextPublishDue(now: Date) async throws -> Date?
    /// Hands a running job back to the queue for a later round (local-time publishes): in one transaction it sets
    /// `notBefore`, makes it `queued` again, releases the lease and restarts its cursor at 0 (answered targets are
    /// forgotten); counters and attempts are kept. - Throws: `PushStoreError.leaseLost`.
    func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws
    /// Cancels the publish: a queued one ends as `.cancelled` at `now`; a running one is marked `cancelRequested`
    /// for its worker to stop; an ended one is left alone. `audit` is appended in the same transaction when the
    /// publish was cancelled or marked (not for an unknown or ended one). - Returns: nil for an unknown publish.
    func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?

    // MARK: Capabilities (declared by the backend, so no caller finds them by casting the store)

    /// The backend's shard calls, when it splits a large publish into shards that any node claims (PostgreSQL);
    /// nil (the default) when it delivers every publish as one unit.
    var sharding: (any ShardedPublishQueue)? { get }
    /// The backend's announcements of queue changes made by any node (PostgreSQL's LISTEN/NOTIFY); nil (the
    /// default) when it makes none, and the engine finds work by polling alone.
    var queueNotices: (any QueueNotifying)? { get }
}

extension PublishQueue {
    /// No shards: every publish is one unit.
    package var sharding: (any ShardedPublishQueue)? { nil }
    /// No announcements.
    package var queueNotices: (any QueueNotifying)? { nil }
}

/// Delivery results outside a checkpoint (a retried or late answer), with their effect on device health.
package protocol DeliveryResultStore: Sendable {
    /// Records delivery results and their health effects (see `DeviceEffect`) in one transaction.
    func recordDeviceResults(_ results: [DeviceResult]) async throws
}

/// Reporting API events (delivered, opened) and the statistics read from them and from the queue.
package protocol EventStore: Sendable {
    /// Records Reporting API events; a repeated (publish, device, kind) counts once. - Returns: how many were new.
    func recordEvents(_ events: [ReportingEvent]) async throws -> Int
    /// The device and the publish a Reporting API event names, read together, for checking the event.
    func reportFacts(instanceID: String, deviceID: String, publishID: String) async throws -> ReportFacts
    /// The instance's device count and the publishes created since `since`, with their counters summed.
    func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics
}

/// The durable webhook outbox: requests queued with the change that caused them, claimed with a lease.
package protocol WebhookQueue: Sendable {
    /// Durably queues a webhook, due at `now`. - Returns: its id.
    func enqueueWebhook(_ request: WebhookRequest, now: Date) async throws -> Int64
    /// Claims up to `limit` webhooks due at `now`, oldest first; each is hidden from other callers for
    /// `leaseDuration` (so a crash mid-attempt retries it later).
    func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook]
    /// Records an attempt's outcome. - Throws: `PushStoreError.notFound`.
    func markWebhook(_ id: Int64, outcome: WebhookOutcome, now: Date) async throws
    /// When the next pending webhook is due: a retry's time, or the end of a claim's lease; nil when none is
    /// pending. Lets the outbox sleep until then instead of polling.
    func nextWebhookDue() async throws -> Date?
}

/// The durable record of devices the push services declared dead (`DeviceInvalidation`), written in the
/// transaction that invalidated them: the customer's pull feed and the source of `device.invalidated` webhooks.
package protocol InvalidationLog: Sendable {
    /// The instance's invalidations with `id > after`, oldest first, at most `limit`.
    func invalidations(instanceID: String, after: Int64, limit: Int) async throws -> [DeviceInvalidation]
    /// Invalidations of any instance not yet handed to the webhook outbox, oldest first, at most `limit`.
    func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation]
    /// Marks invalidations as handed to the outbox (or as needing no webhook).
    func markInvalidationsNotified(_ ids: [Int64]) async throws
    /// Deletes up to `limit` invalidations recorded before `before`, and up to `limit` of each instance's oldest
    /// beyond its newest `keepPerInstance`. - Returns: how many. Call again while it equals `limit`.
    func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int
}

/// APNs provider tokens shared by every process on the same database (one signature per key and period); the HMS
/// OAuth token is kept in the same rows under team ID `hms:<client ID>` (`HMSSharedToken` in PushServer).
package protocol ProviderTokenStorage: Sendable {
    /// The provider token stored for (`teamID`, `keyID`), if any.
    func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord?
    /// Stores `new` for (`teamID`, `keyID`) unless a token other than `expectedJWT` (the one the caller read; nil:
    /// none) is stored, in one transaction. - Returns: the token stored afterwards: `new` when this call won, the
    /// one another process or node stored first otherwise.
    func swapProviderToken(
        teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
    ) async throws -> ProviderTokenRecord
}

/// The instances' keys (scoped keys and rolled Beams secrets), shared by every node on the same database. Reads are
/// cheap (a handful of rows per instance), so callers cache them for a second instead of being notified.
package protocol APIKeyStore: Sendable {
    /// Every key of the instance (revoked and expired ones included), oldest first.
    func apiKeys(instanceID: String) async throws -> [APIKeyRecord]
    /// Stores a new key. - Returns: `false` (and changes nothing) when the instance already has a key with its id.
    /// `audit`, when given, is appended in the same transaction, and only when the key is stored.
    @discardableResult
    func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool
    /// In one transaction: ends `keyID` at `retireAt` (an earlier expiry is kept), stores `replacement` and appends
    /// `audit`. - Returns: `false` (and changes nothing, `audit` included) when the key does not exist or is revoked.
    func rollAPIKey(instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?)
        async throws -> Bool
    /// Marks the key revoked at `at` (a revoked key keeps its first revocation time) and appends `audit` in the same
    /// transaction. - Returns: whether it exists (when not, nothing is appended).
    func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool
    /// Moves each key's `lastUsedAt` forward to the given time (never backwards); unknown keys are skipped.
    func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws
}

extension PublishQueue {
    /// From the whole status; a backend whose status adds nothing to the stored counters reads only those.
    package func publishCounters(instanceID: String, publishID: String) async throws -> PublishCounters {
        try await publishStatus(instanceID: instanceID, publishID: publishID)?.counters ?? [:]
    }

    /// `cancelPublish` without an audit entry.
    package func cancelPublish(instanceID: String, publishID: String, now: Date) async throws -> PublishCancellation? {
        try await cancelPublish(instanceID: instanceID, publishID: publishID, now: now, audit: nil)
    }
}

extension DeviceRegistry {
    /// `deleteUser` without an audit entry.
    package func deleteUser(instanceID: String, userID: String) async throws -> Int {
        try await deleteUser(instanceID: instanceID, userID: userID, audit: nil)
    }
}

extension APIKeyStore {
    /// `insertAPIKey` without an audit entry (tests, the first storing of a config file's Beams secret).
    @discardableResult
    package func insertAPIKey(_ key: APIKeyRecord) async throws -> Bool { try await insertAPIKey(key, audit: nil) }
    package func rollAPIKey(instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord) async throws
        -> Bool
    {
        try await rollAPIKey(
            instanceID: instanceID, keyID: keyID, retireAt: retireAt, replacement: replacement,
            audit: nil)
    }
    package func revokeAPIKey(instanceID: String, keyID: String, at: Date) async throws -> Bool {
        try await revokeAPIKey(instanceID: instanceID, keyID: keyID, at: at, audit: nil)
    }
}

/// The instances' audit log (`AuditEntry`). Entries that record a change are appended by the store method making
/// the change, in its transaction; this protocol appends only those that record no change (a refused request),
/// reads, and prunes past the retention period. Nothing updates an entry.
package protocol AuditLog: Sendable {
    /// Appends an entry that records no change of its own (a refused request).
    func appendAudit(_ entry: AuditEntry) async throws
    /// Entries with `seq` greater than `after`, oldest first, at most `limit`: of one instance (nil: of every
    /// instance, the server-wide log) and of one action (nil: every action).
    func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws -> [AuditEntry]
    /// Deletes up to `limit` entries (of every instance) older than `before`. - Returns: how many.
    func pruneAudit(before: Date, limit: Int) async throws -> Int
}

extension AuditLog {
    /// The instance's entries with `seq` greater than `after`, oldest first, at most `limit`.
    package func auditEntries(instanceID: String, after: Int64, limit: Int) async throws -> [AuditEntry] {
        try await auditEntries(instanceID: instanceID, action: nil, after: after, limit: limit)
    }
}

/// Deletes history past the retention period.
package protocol RetentionStore: Sendable {
    /// Deletes up to `limit` rows of each kind of history older than `before`: publishes that ended (with their
    /// counters), reporting events, webhooks that were delivered or given up, and devices invalidated (with their
    /// interests). Call again while any count equals `limit`.
    func purge(before: Date, limit: Int) async throws -> PurgeResult
    /// Deletes up to `limit` devices (with their interests and user binding) that last registered before
    /// `registeredBefore` and whose latest delivery result is not an acceptance (2xx), or that never had one:
    /// junk an anonymous client registered and nobody could deliver to. A real app registers again at its next
    /// launch (the iOS SDK on every launch, and after any 404). - Returns: how many. Call again while it equals
    /// `limit`.
    func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int
}

/// The backend's own health and lifetime.
package protocol StoreBackend: Sendable {
    /// Commits a tiny write that changes no data, to learn whether the backend can write again after a
    /// `StoreUnavailableError`. - Throws: `StoreUnavailableError` while it still cannot.
    func probeWrite() async throws

    /// Finishes queued work and releases the backend. Later calls throw `PushStoreError.closed`.
    func close() async throws
}

extension DeviceRegistry {
    /// Registers without a per-instance device cap (seeding, tests).
    package func registerDevice(_ registration: DeviceRegistration) async throws -> RegisteredDevice {
        try await registerDevice(registration, maxDevicesPerInstance: .max)
    }

    /// Replaces the device's interests without per-instance caps (seeding, tests).
    package func setInterests(instanceID: String, deviceID: String, interests: [String]) async throws -> Bool {
        try await setInterests(instanceID: instanceID, deviceID: deviceID, interests: interests, limits: .unlimited)
    }

    /// Adds an interest without per-instance caps (seeding, tests).
    package func addInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try await addInterest(instanceID: instanceID, deviceID: deviceID, interest: interest, limits: .unlimited)
    }
}

extension PublishQueue {
    /// A checkpoint with no answers above the cursor.
    package func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult]
    ) async throws {
        try await checkpoint(
            job, workerID: workerID, cursor: cursor, counters: counters, deviceResults: deviceResults,
            answered: [])
    }

    /// Leases the oldest claimable job, whatever its instance (`ClaimPreference.oldestFirst`).
    package func claimJob(workerID: String, leaseDuration: Duration, now: Date) async throws -> ClaimedJob? {
        try await claimJob(workerID: workerID, leaseDuration: leaseDuration, now: now, preference: .oldestFirst)
    }
}
