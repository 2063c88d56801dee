import Foundation
import Locking
import PushStore

/// A `PushStorage` held in memory: the second backend the contract suite (`Tests/PushStoreTests/Contract`) checks,
/// and the fake engine and API unit tests run against instead of a database file.
///
/// It keeps every documented rule of the contract (idempotent registration, device and user limits, orphan
/// interest cleanup, leases, cursors that never go back, health effects, …) but nothing survives the process, so
/// it is for tests only. Every operation runs under one `Locked`, which makes each call atomic like a backend
/// transaction; the work is small (no call blocks on I/O), so it runs inline on the caller's task.
///
/// It is bounded: it holds at most `capacity` rows (devices, publishes, events, webhooks, provider tokens) and
/// refuses more with `StoreUnavailableError(.diskFull)`, like a full disk; `purge` frees history. Tests can also
/// make it unavailable on purpose (`setUnavailable`) to exercise outage handling without a file system.
package final class InMemoryPushStore: PushStorage {
    /// What survives a "restart": the data and the injected outage, shared by `reopened()` stores like a database
    /// file is shared by the processes that open it.
    private struct Shared {
        var data: InMemoryState
        var unavailable: StoreUnavailableError?
    }

    private let shared: Locked<Shared>
    private let closed = Locked(false)
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - clock: the time source for registration times (as `SQLitePushStore.Configuration.clock`). Default: the
    ///     system clock.
    ///   - capacity: rows held at most. Default 1 000 000.
    package convenience init(clock: @escaping @Sendable () -> Date = { Date() }, capacity: Int = 1_000_000) {
        self.init(shared: Locked(Shared(data: InMemoryState(capacity: capacity))), clock: clock)
    }

    private init(shared: Locked<Shared>, clock: @escaping @Sendable () -> Date) {
        self.shared = shared
        self.clock = clock
    }

    /// A new, open store over this one's data: what a restarted process sees when it opens the same database. This
    /// store may be closed already (a clean restart) or not (a crashed worker whose leases are still held).
    package func reopened() -> InMemoryPushStore {
        InMemoryPushStore(shared: shared, clock: clock)
    }

    /// Makes every later call (of this store and of every `reopened()` one) throw `error`, storing nothing, until
    /// called again with `nil`: a disk that filled up or failed, for outage tests.
    package func setUnavailable(_ error: StoreUnavailableError?) {
        shared.withLock { $0.unavailable = error }
    }

    /// Runs `body` atomically on the data, unless this store is closed or the data is made unavailable.
    func access<T>(_ body: (inout InMemoryState) throws -> T) throws -> T {
        if closed.withLock({ $0 }) { throw PushStoreError.closed }
        return try shared.withLock { shared in
            if let unavailable = shared.unavailable { throw unavailable }
            return try body(&shared.data)
        }
    }

    // MARK: StoreBackend

    package func probeWrite() async throws {
        try access { _ in }
    }

    /// Idempotent; later calls of anything else throw `PushStoreError.closed`.
    package func close() async throws {
        closed.withLock { $0 = true }
    }

    // MARK: DeviceRegistry

    package func registerDevice(_ registration: DeviceRegistration, maxDevicesPerInstance: Int) async throws
        -> RegisteredDevice
    {
        let now = clock()
        return try access { try $0.register(registration, now: now, maxDevicesPerInstance: maxDevicesPerInstance) }
    }

    package func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        let now = clock()
        return try access { try $0.register(registrations, now: now) }
    }

    package func device(instanceID: String, id: String) async throws -> Device? {
        try access { $0.device(instanceID: instanceID, id: id) }
    }

    package func deviceRef(instanceID: String, id: String) async throws -> Int64? {
        try access { $0.ref(instanceID: instanceID, deviceID: id) }
    }

    package func device(instanceID: String, platform: Platform, token: String) async throws -> Device? {
        try access { $0.device(instanceID: instanceID, platform: platform, token: token) }
    }

    package func deleteDevice(instanceID: String, id: String) async throws -> Bool {
        try access { $0.deleteDevice(instanceID: instanceID, id: id) }
    }

    package func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try access { $0.updateTimeZone(instanceID: instanceID, deviceID: deviceID, timeZone: timeZone) }
    }

    package func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try access { $0.updateMetadata(instanceID: instanceID, deviceID: deviceID, metadata: metadata) }
    }

    package func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws
        -> Bool
    {
        let now = clock()
        return try access {
            try $0.updateToken(instanceID: instanceID, deviceID: deviceID, platform: platform, token: token, now: now)
        }
    }

    package func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) async throws
        -> InterestPage?
    {
        try access { $0.interests(instanceID: instanceID, deviceID: deviceID, limit: limit, cursor: cursor) }
    }

    package func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits)
        async throws -> Bool
    {
        try access {
            try $0.setInterests(instanceID: instanceID, deviceID: deviceID, interests: Set(interests), limits: limits)
        }
    }

    package func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits)
        async throws -> Bool
    {
        try access {
            try $0.setInterests(instanceID: instanceID, deviceID: deviceID, adding: [interest], limits: limits)
        }
    }

    package func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try access { $0.removeInterest(instanceID: instanceID, deviceID: deviceID, interest: interest) }
    }

    package func subscriberCount(instanceID: String, interest: String) async throws -> Int {
        try access { $0.subscriberCount(instanceID: instanceID, interest: interest) }
    }

    package func setUser(instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int) async throws
        -> SetUserResult
    {
        try access {
            $0.setUser(instanceID: instanceID, deviceID: deviceID, userID: userID, maxDevicesPerUser: maxDevicesPerUser)
        }
    }

    package func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try access { state in
            let removed = state.deleteUser(instanceID: instanceID, userID: userID)
            state.appendAudit(audit)
            return removed
        }
    }

    package func devices(instanceID: String, userID: String) async throws -> [Device] {
        try access { $0.devices(instanceID: instanceID, userID: userID) }
    }

    // MARK: PublishQueue

    package func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID {
        try access { try $0.enqueue(job) }
    }

    package func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference)
        async throws
        -> ClaimedJob?
    {
        try access { $0.claim(workerID: workerID, leaseDuration: leaseDuration, now: now, preference: preference) }
    }

    @discardableResult
    package func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws
        -> Bool
    {
        try access { try $0.renewLease(job, workerID: workerID, leaseDuration: leaseDuration, now: now) }
    }

    package func targets(for job: PublishJob, after cursor: Int64, limit: Int) async throws -> TargetPage {
        try access { $0.targets(for: job, after: cursor, limit: limit) }
    }

    package func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws {
        try access {
            try $0.checkpoint(
                job, workerID: workerID, cursor: cursor, counters: counters, deviceResults: deviceResults,
                answered: answered)
        }
    }

    package func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64> {
        try access { $0.answeredTargets(job) }
    }

    package func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) async throws {
        try access {
            try $0.finish(job, workerID: workerID, state: state, targetsTotal: targetsTotal, summary: summary, now: now)
        }
    }

    package func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus? {
        try access { $0.publishStatus(instanceID: instanceID, publishID: publishID) }
    }

    package func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus] {
        try access { $0.recentPublishes(instanceID: instanceID, limit: limit) }
    }

    package func queueDepth() async throws -> Int {
        try access { $0.queueDepth }
    }

    package func nextPublishDue(now: Date) async throws -> Date? {
        try access { $0.nextPublishDue(now: now) }
    }

    package func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws {
        try access { try $0.reschedule(job, workerID: workerID, notBefore: notBefore) }
    }

    package func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?
    {
        try access { state in
            let outcome = state.cancel(instanceID: instanceID, publishID: publishID, now: now)
            switch outcome {
            case .cancelled?, .running?: state.appendAudit(audit)
            case .alreadyEnded?, nil: break
            }
            return outcome
        }
    }

    // MARK: DeliveryResultStore, EventStore

    package func recordDeviceResults(_ results: [DeviceResult]) async throws {
        try access { $0.apply(results) }
    }

    package func recordEvents(_ events: [ReportingEvent]) async throws -> Int {
        try access { try $0.record(events) }
    }

    package func reportFacts(instanceID: String, deviceID: String, publishID: String) async throws -> ReportFacts {
        try access { $0.reportFacts(instanceID: instanceID, deviceID: deviceID, publishID: publishID) }
    }

    package func statistics(instanceID: String, since: Date) async throws -> InstanceStatistics {
        try access { $0.statistics(instanceID: instanceID, since: since) }
    }

    // MARK: WebhookQueue

    package func enqueueWebhook(_ request: WebhookRequest, now: Date) async throws -> Int64 {
        try access { try $0.enqueue(request, now: now) }
    }

    package func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook] {
        try access { $0.due(now: now, limit: limit, leaseDuration: leaseDuration) }
    }

    package func markWebhook(_ id: Int64, outcome: WebhookOutcome, now: Date) async throws {
        try access { try $0.mark(id, outcome: outcome, now: now) }
    }

    package func nextWebhookDue() async throws -> Date? {
        try access { $0.nextWebhookDue() }
    }

    // MARK: ProviderTokenStorage, RetentionStore

    package func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
        try access { $0.providerTokens[InMemoryState.ProviderTokenKey(teamID: teamID, keyID: keyID)] }
    }

    package func swapProviderToken(
        teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
    ) async throws -> ProviderTokenRecord {
        try access { try $0.swapProviderToken(teamID: teamID, keyID: keyID, expectedJWT: expectedJWT, new: new) }
    }

    package func purge(before: Date, limit: Int) async throws -> PurgeResult {
        try access { $0.purge(before: before, limit: limit) }
    }

    package func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try access { $0.purgeUndeliveredDevices(registeredBefore: registeredBefore, limit: limit) }
    }

    // MARK: Live Activities

    package func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult {
        let row = LiveActivityToken(
            deviceID: deviceID, kind: .start, token: token, attributesType: attributesType,
            createdAt: now, updatedAt: now)
        return try access {
            try $0.putLiveActivity(
                instanceID: instanceID, deviceID: deviceID, token: row,
                bound: limits.maxStartTokensPerDevice, now: now)
        }
    }

    package func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult {
        let row = LiveActivityToken(
            deviceID: deviceID, kind: .update, token: token, attributesType: attributesType,
            activityID: activityID, reference: reference, expiresAt: expiresAt,
            createdAt: now, updatedAt: now)
        return try access {
            try $0.putLiveActivity(
                instanceID: instanceID, deviceID: deviceID, token: row,
                bound: limits.maxActivitiesPerDevice, now: now)
        }
    }

    package func deleteLiveActivityToken(
        instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String
    ) async throws -> Bool? {
        try access { $0.deleteLiveActivity(instanceID: instanceID, deviceID: deviceID, kind: kind, name: name) }
    }

    package func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]? {
        try access { $0.liveActivityTokens(instanceID: instanceID, deviceID: deviceID) }
    }

    package func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int, now: Date
    ) async throws -> TargetPage {
        try access { $0.liveActivityTargets(for: job, selector: selector, after: cursor, limit: limit, now: now) }
    }

    package func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int {
        try access { $0.deleteDeadLiveActivities(deaths) }
    }

    package func purgeExpiredLiveActivityTokens(before: Date, limit: Int) async throws -> Int {
        try access { $0.purgeExpiredLiveActivities(before: before, limit: limit) }
    }

    // MARK: Invalidation log

    package func invalidations(instanceID: String, after: Int64, limit: Int) async throws -> [DeviceInvalidation] {
        try access { state in
            Array(
                state.invalidations.lazy.map(\.record)
                    .filter { $0.instanceID == instanceID && $0.id > after }.prefix(max(0, limit)))
        }
    }

    package func unnotifiedInvalidations(limit: Int) async throws -> [DeviceInvalidation] {
        try access { state in
            Array(state.invalidations.lazy.filter { !$0.notified }.map(\.record).prefix(max(0, limit)))
        }
    }

    package func markInvalidationsNotified(_ ids: [Int64]) async throws {
        let marked = Set(ids)
        try access { state in
            for index in state.invalidations.indices where marked.contains(state.invalidations[index].record.id) {
                state.invalidations[index].notified = true
            }
        }
    }

    package func purgeInvalidations(before: Date, keepPerInstance: Int, limit: Int) async throws -> Int {
        try access { state in
            var kept: [String: Int] = [:]
            var removed = Set<Int64>()
            // Newest first, so each instance's newest `keepPerInstance` are the ones counted first.
            for entry in state.invalidations.reversed() where removed.count < max(0, limit) {
                let count = kept[entry.record.instanceID, default: 0] + 1
                kept[entry.record.instanceID] = count
                if entry.record.at < before || count > keepPerInstance { removed.insert(entry.record.id) }
            }
            state.invalidations.removeAll { removed.contains($0.record.id) }
            return removed.count
        }
    }
}

extension InMemoryPushStore: QuotaUsageReading {
    package func quotaUsage(instanceID: String, day: UTCDay) async throws -> QuotaUsage {
        try access {
            QuotaUsage(
                devices: Int64($0.devicesPerInstance[instanceID, default: 0]),
                publishes: $0.publishDayCounts[
                    InMemoryState.InstanceKey(instanceID: instanceID, name: day.number),
                    default: 0])
        }
    }
}
