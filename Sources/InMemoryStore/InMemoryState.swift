import Foundation
import PushStore

/// Everything an `InMemoryPushStore` holds, as plain values behind its one lock. Each operation runs as one
/// mutating call, so it is atomic the way a backend transaction is: an operation checks everything that can make it
/// fail before it changes anything, so a throw leaves the state as it was.
struct InMemoryState {
    struct InstanceKey<Name: Hashable>: Hashable {
        var instanceID: String
        var name: Name
    }

    struct TokenKey: Hashable {
        var instanceID: String
        var platform: Platform
        var token: String
    }

    struct StoredDevice {
        /// The increasing internal key targets are ordered by (`Target.ref`).
        var ref: Int64
        var device: Device
        var interests: Set<String>
    }

    struct StoredJob {
        var id: PublishJobID
        var job: PublishJob
        var state: PublishState = .queued
        var startedAt: Date?
        var finishedAt: Date?
        var leaseOwner: String?
        var leaseExpiresAt: Int64?
        var cursor: Int64 = 0
        var attempts = 0
        var targetsTotal: Int64?
        var summary: String?
        var counters: PublishCounters = [:]
        var answered: Set<Int64> = []
        var cancelRequested = false
    }

    struct EventKey: Hashable {
        var instanceID: String
        var publishID: String
        var kind: Int
        var deviceID: String
    }

    enum WebhookState { case pending, delivered, gaveUp }

    struct StoredWebhook {
        var id: Int64
        var request: WebhookRequest
        var state: WebhookState = .pending
        var attempts = 0
        var nextAttemptAt: Int64
        var createdAt: Date
        var finishedAt: Int64?
        var lastError: String?
    }

    struct ProviderTokenKey: Hashable {
        var teamID: String
        var keyID: String
    }

    /// Rows (devices, jobs, events, webhooks, provider tokens) held at most; see `InMemoryPushStore.init`.
    let capacity: Int

    var devices: [Int64: StoredDevice] = [:]
    var devicesByPublicID: [InstanceKey<String>: Int64] = [:]
    var devicesByToken: [TokenKey: Int64] = [:]
    var devicesByUser: [InstanceKey<String>: Set<Int64>] = [:]
    var devicesPerInstance: [String: Int] = [:]
    /// Followers per interest; an interest nobody follows has no entry (the orphan cleanup).
    var followers: [InstanceKey<String>: Set<Int64>] = [:]
    /// (device, interest) pairs and distinct interest names per instance, kept by `follow` and `unfollow`, for
    /// the per-instance caps (`InterestLimits`).
    var subscriptionsPerInstance: [String: Int] = [:]
    var interestsPerInstance: [String: Int] = [:]
    var lastDeviceRef: Int64 = 0

    /// Publishes per (instance, UTC day number) counted against `PublishJob.dailyPublishQuota`.
    var publishDayCounts: [InstanceKey<Int64>: Int64] = [:]

    var jobs: [Int64: StoredJob] = [:]
    var jobsByPublishID: [InstanceKey<String>: Int64] = [:]
    var lastJobID: Int64 = 0

    var events: [EventKey: Date] = [:]

    var webhooks: [Int64: StoredWebhook] = [:]
    var lastWebhookID: Int64 = 0

    var providerTokens: [ProviderTokenKey: ProviderTokenRecord] = [:]

    /// Each instance's keys (`APIKeyStore`), oldest first.
    var apiKeys: [String: [APIKeyRecord]] = [:]

    /// The audit log (`AuditLog`) in `seq` order.
    var audit: [AuditEntry] = []
    var lastAuditSeq: Int64 = 0
    /// Run-time instances by lower-cased id, deleted ones included (tombstones keep the version from going back).
    var storedInstances: [String: (row: StoredInstance, deleted: Bool)] = [:]
    var storedInstancesVersion: Int64 = 0

    /// The invalidation log in id order, with whether each was handed to the webhook notifier.
    var invalidations: [(record: DeviceInvalidation, notified: Bool)] = []
    var lastInvalidationID: Int64 = 0

    /// Live Activity rows by their own increasing key (`Target.ref` of a Live Activity publish).
    var liveActivities: [Int64: StoredLiveActivity] = [:]
    var lastLiveActivityRef: Int64 = 0

    init(capacity: Int) { self.capacity = max(0, capacity) }

    var rows: Int {
        devices.count + jobs.count + events.count + webhooks.count + providerTokens.count + liveActivities.count
    }

    /// Refuses an operation that would add `adding` rows past the capacity, the way a full disk refuses a write.
    func requireRoom(for adding: Int) throws {
        if adding > 0 && rows + adding > capacity {
            throw StoreUnavailableError(.diskFull, detail: "in-memory store holds its capacity of \(capacity) rows")
        }
    }
}

extension Date {
    /// The date as a backend stores it: whole milliseconds, so values read back compare equal across backends.
    var stored: Date { Date(millisecondsSince1970: millisecondsSince1970) }
}
