import Foundation

/// Whom a publish goes to.
public enum PublishKind: String, Sendable {
    /// Every device following any of `targets` (interest names), each once.
    case interests
    /// Every device of each user in `targets` (user ids).
    case users
    /// APNs broadcast channels (`POST …/publishes/channels`): no devices and no `targets`; the channels are in the
    /// payload, which only the engine reads. Its targets are the empty page.
    case channels
}

/// A publish's lifecycle.
package enum PublishState: String, Sendable {
    case queued
    case running
    case finished
    /// Ended without delivering (e.g. the engine could not build the payload).
    case failed
    /// Ended by `cancelPublish`: nothing more was sent after it (the counters hold what was sent before).
    case cancelled
    /// Ended unsent (or partly sent) because its delivery window (`expiresAt`) closed before it could go out.
    case expired

    /// The job will not run again.
    package var isFinal: Bool { self != .queued && self != .running }
}

/// The store's handle for a queued publish.
package struct PublishJobID: Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int64
    package init(rawValue: Int64) { self.rawValue = rawValue }
    package var description: String { String(rawValue) }
}

/// A publish to run, as the engine hands it to the queue.
package struct PublishJob: Sendable, Equatable {
    package var instanceID: String
    /// The id returned to the caller (`publishId`); unique per instance.
    package var publishID: String
    package var kind: PublishKind
    /// Interest names or user ids.
    package var targets: [String]
    /// The prepared payload and header fields, in a format only the engine knows.
    package var payload: Data
    package var webhookURL: String?
    package var createdAt: Date
    /// A scheduled publish: not claimable before this moment (nil: at once). The engine moves it forward between
    /// the rounds of a local-time publish (`rescheduleJob`), so a claimed job carries its current round's time.
    package var notBefore: Date?
    /// The Beams bridge's copy of this publish (docs/MIGRATING.md), queued in the job's transaction by backends
    /// that are a `BeamsForwardQueue`, due at `notBefore` (or `createdAt`); not part of the job once stored (a
    /// claimed job has nil).
    package var beamsForward: BeamsForward?
    /// The instance's publishes-per-day quota (nil: none). The store counts the publish against the UTC day of
    /// `createdAt` in the job's transaction, shared by every node, and refuses it with `publishQuotaReached` when
    /// the day already holds this many: a refused publish stores nothing. Not part of the job once stored.
    package var dailyPublishQuota: Int?
    /// The W3C `traceparent` of the span that accepted the publish (docs/OPERATIONS.md, "Traces"): whichever node
    /// claims the job, or a shard of it, continues that trace. nil when the publish was not traced. Opaque to the
    /// store, which keeps it as given.
    package var traceParent: String?
    /// The `tracestate` that goes with `traceParent` (vendors' entries), nil when none.
    package var traceState: String?

    package init(
        instanceID: String, publishID: String, kind: PublishKind, targets: [String], payload: Data,
        webhookURL: String? = nil, createdAt: Date, notBefore: Date? = nil, beamsForward: BeamsForward? = nil,
        dailyPublishQuota: Int? = nil,
        traceParent: String? = nil, traceState: String? = nil
    ) {
        self.instanceID = instanceID
        self.publishID = publishID
        self.kind = kind
        self.targets = targets
        self.payload = payload
        self.webhookURL = webhookURL
        self.createdAt = createdAt
        self.notBefore = notBefore
        self.beamsForward = beamsForward
        self.dailyPublishQuota = dailyPublishQuota
        self.traceParent = traceParent
        self.traceState = traceState
    }
}

/// A job a worker now holds a lease on, with where to resume.
package struct ClaimedJob: Sendable, Equatable {
    package var id: PublishJobID
    package var job: PublishJob
    /// Every target with `ref <= cursor` has a final result; resume with `targets(after: cursor)`.
    package var cursor: Int64
    /// Counters accumulated by earlier checkpoints (empty on a first attempt).
    package var counters: PublishCounters
    /// 1 on the first claim, 2 after one crash or lost lease, ...
    package var attempt: Int
    package var leaseExpiresAt: Date
    /// `cancelPublish` was called while the job ran (on a node that then died, or elsewhere): the claimant ends it
    /// as `.cancelled` without sending.
    package var cancelRequested: Bool
    /// Set when the claim is one shard of a publish split by `ShardedPublishQueue.splitPublish`: `cursor`,
    /// `counters` and `attempt` are the shard's, and every write goes through the shard's calls.
    package var shard: PublishShard? = nil
    /// Set when the claim is a split publish whose shards have all ended, held by a node that died before it
    /// finished the publish: the claimant finishes it as this says, without sending.
    package var shardsEnded: ShardedPublishEnd? = nil

    /// Backends build these; so do tests.
    package init(
        id: PublishJobID, job: PublishJob, cursor: Int64, counters: PublishCounters, attempt: Int,
        leaseExpiresAt: Date, cancelRequested: Bool = false
    ) {
        self.id = id
        self.job = job
        self.cursor = cursor
        self.counters = counters
        self.attempt = attempt
        self.leaseExpiresAt = leaseExpiresAt
        self.cancelRequested = cancelRequested
    }
}

/// One device to deliver to.
package struct Target: Sendable, Equatable {
    /// The device's internal, increasing key: targets come in `ref` order and the checkpoint cursor is a `ref`.
    package var ref: Int64
    /// The public device id.
    package var deviceID: String
    package var platform: Platform
    package var token: String
    package var environment: PushEnvironment
    package var environmentDeclared: Bool
    package var lastRegisteredAt: Date
    package var userID: String?
    /// The device's IANA time zone (`updateTimeZone`), nil when none was set: local-time publishes use it.
    package var timeZone: String?

    /// Store backends build targets; so do engine tests.
    package init(
        ref: Int64, deviceID: String, platform: Platform, token: String, environment: PushEnvironment,
        environmentDeclared: Bool, lastRegisteredAt: Date, userID: String?, timeZone: String? = nil
    ) {
        self.ref = ref
        self.deviceID = deviceID
        self.platform = platform
        self.token = token
        self.environment = environment
        self.environmentDeclared = environmentDeclared
        self.lastRegisteredAt = lastRegisteredAt
        self.userID = userID
        self.timeZone = timeZone
    }
}

/// A page of targets.
package struct TargetPage: Sendable, Equatable {
    package var targets: [Target]
    /// The greatest `ref` this page looked at (skipped invalidated devices included); ask for the next page
    /// `after` it.
    package var cursor: Int64
    /// `true` when no target after `cursor` exists.
    package var isLast: Bool

    /// Backends build these; so do tests.
    package init(targets: [Target], cursor: Int64, isLast: Bool) {
        self.targets = targets
        self.cursor = cursor
        self.isLast = isLast
    }
}

/// What a publish looks like from the outside (status API, recent publishes).
package struct PublishStatus: Sendable, Equatable {
    package var id: PublishJobID
    package var instanceID: String
    package var publishID: String
    package var kind: PublishKind
    package var state: PublishState
    package var counters: PublishCounters
    /// Set by `finishJob`.
    package var targetsTotal: Int64?
    package var summary: String?
    package var attempts: Int
    package var createdAt: Date
    package var startedAt: Date?
    package var finishedAt: Date?
    /// Distinct devices that reported a delivery / an open (Reporting API).
    package var delivered: Int
    package var opened: Int
    /// The job's `notBefore`: when a scheduled publish (or a local-time publish's next round) may start.
    package var notBefore: Date?
    /// `cancelPublish` was called while it ran; it ends as `.cancelled` once its run (or the next claimant) stops.
    package var cancelRequested: Bool
    /// Set when the claim is one shard of a publish split by `ShardedPublishQueue.splitPublish`: `cursor`,
    /// `counters` and `attempt` are the shard's, and every write goes through the shard's calls.
    package var shard: PublishShard? = nil
    /// Set when the claim is a split publish whose shards have all ended, held by a node that died before it
    /// finished the publish: the claimant finishes it as this says, without sending.
    package var shardsEnded: ShardedPublishEnd? = nil

    /// Backends build these; so do tests.
    package init(
        id: PublishJobID, instanceID: String, publishID: String, kind: PublishKind, state: PublishState,
        counters: PublishCounters, targetsTotal: Int64?, summary: String?, attempts: Int, createdAt: Date,
        startedAt: Date?, finishedAt: Date?, delivered: Int, opened: Int, notBefore: Date? = nil,
        cancelRequested: Bool = false
    ) {
        self.id = id
        self.instanceID = instanceID
        self.publishID = publishID
        self.kind = kind
        self.state = state
        self.counters = counters
        self.targetsTotal = targetsTotal
        self.summary = summary
        self.attempts = attempts
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.delivered = delivered
        self.opened = opened
        self.notBefore = notBefore
        self.cancelRequested = cancelRequested
    }
}

/// A device-side report (Reporting API).
package struct ReportingEvent: Sendable, Equatable {
    package enum Kind: Int, Sendable {
        case delivery = 1
        case open = 2
    }

    package var instanceID: String
    package var publishID: String
    package var deviceID: String
    package var userID: String?
    package var kind: Kind
    package var at: Date

    package init(instanceID: String, publishID: String, deviceID: String, userID: String?, kind: Kind, at: Date) {
        self.instanceID = instanceID
        self.publishID = publishID
        self.deviceID = deviceID
        self.userID = userID
        self.kind = kind
        self.at = at
    }
}

/// What the Reporting API checks an event against (see `PushStorage.reportFacts`).
package struct ReportFacts: Sendable, Equatable {
    /// The device the event names; nil when the instance has no such device.
    package var device: Device?
    /// The publish the event names; nil when unknown (never made here, or deleted by retention).
    package var publish: ReportedPublish?

    package init(device: Device?, publish: ReportedPublish?) {
        self.device = device
        self.publish = publish
    }
}

/// The parts of a publish a report is checked against.
public struct ReportedPublish: Sendable, Equatable {
    package var kind: PublishKind
    package var createdAt: Date
    /// nil while it waits in the queue: no device can have received it yet.
    package var startedAt: Date?
    package var finishedAt: Date?
    /// Whether the reported device is in the publish's audience: for a users publish, the user bound to it is one
    /// of the targets; for an interests publish, it follows one of the target interests. Checked now, not when the
    /// publish ran (no store keeps a per-device record of every publish: PostgreSQL's sharded runs do not write
    /// successes per device), with at most 1000 user or 100 interest lookups by key.
    package var targetsDevice: Bool

    public init(kind: PublishKind, createdAt: Date, startedAt: Date?, finishedAt: Date?, targetsDevice: Bool) {
        self.kind = kind
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.targetsDevice = targetsDevice
    }
}

/// What `cancelPublish` did.
package enum PublishCancellation: Sendable, Equatable {
    /// The publish was queued (or scheduled): it is `.cancelled` now and was never claimed again.
    case cancelled(PublishStatus)
    /// The publish is running: it is marked (`cancelRequested`) and the worker holding it must stop it and end
    /// it with `finishJob(state: .cancelled)`; a later claimant ends it at once.
    case running(PublishJobID)
    /// The publish had already ended (finished, failed, cancelled or expired): nothing changed.
    case alreadyEnded(PublishStatus)
}
