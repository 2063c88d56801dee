import Foundation

/// What the Beams bridge sends upstream (docs/MIGRATING.md): a publish replayed to the Beams publish API, or the
/// retirement of a device that moved here (`DELETE …/device_api/v1/…/devices/{platform}/{id}` at Beams).
package enum BeamsForwardKind: String, Sendable, CaseIterable {
    /// `POST …/publish_api/v1/instances/{id}/publishes/interests`.
    case publishInterests = "publish_interests"
    /// `POST …/publish_api/v1/instances/{id}/publishes/users`.
    case publishUsers = "publish_users"
    /// `DELETE …/device_api/v1/instances/{id}/devices/{platform}/{beamsDeviceId}`, no credentials.
    case retireDevice = "retire_device"

    /// A publish forward (shown in the publish's status), as opposed to a device retirement.
    package var isPublish: Bool { self != .retireDevice }
}

/// One request for the Beams bridge to make, queued durably (`BeamsForwardQueue`).
package struct BeamsForward: Sendable, Equatable {
    package var instanceID: String
    package var kind: BeamsForwardKind
    /// What it is about, unique per (instance, kind): the local publish id of a publish forward, or
    /// `<platform>/<beamsDeviceId>` of a retirement (so a device registering again is retired once).
    package var key: String
    /// The body to POST (empty for a retirement).
    package var body: Data

    package init(instanceID: String, kind: BeamsForwardKind, key: String, body: Data = Data()) {
        self.instanceID = instanceID
        self.kind = kind
        self.key = key
        self.body = body
    }
}

/// A forward that is due, claimed for one attempt.
package struct PendingBeamsForward: Sendable, Equatable {
    package var id: Int64
    package var forward: BeamsForward
    /// Attempts made before this one.
    package var attempts: Int
    package var createdAt: Date

    /// Backends build these; so do tests.
    package init(id: Int64, forward: BeamsForward, attempts: Int, createdAt: Date) {
        self.id = id
        self.forward = forward
        self.attempts = attempts
        self.createdAt = createdAt
    }
}

/// How an attempt ended.
package enum BeamsForwardOutcome: Sendable, Equatable {
    /// Beams took it; `upstreamID` is its `publishId` (nil for a retirement).
    case delivered(upstreamID: String?)
    /// Try again at `at` (429, 5xx, no answer).
    case retry(at: Date, error: String)
    /// Not retried (400, 401, 402, 403, 404, 413, 422; too large to send; retries used up).
    case failed(error: String)
    /// Not attempted (the instance's 100 requests/s were spent, or Beams asked to wait): due again at `until`, no
    /// attempt spent.
    case deferred(until: Date)
}

/// What the store knows of a forward, for the publish status (`beamsBridge`).
package struct BeamsForwardRecord: Sendable, Equatable {
    package enum State: String, Sendable {
        case pending, delivered, failed
    }

    package var state: State
    package var attempts: Int
    package var upstreamID: String?
    package var lastError: String?
    package var createdAt: Date
    package var finishedAt: Date?

    package init(
        state: State, attempts: Int, upstreamID: String?, lastError: String?, createdAt: Date, finishedAt: Date?
    ) {
        self.state = state
        self.attempts = attempts
        self.upstreamID = upstreamID
        self.lastError = lastError
        self.createdAt = createdAt
        self.finishedAt = finishedAt
    }
}

/// The Beams bridge's durable outbox (the webhook outbox's pattern: claimed with a lease, marked per attempt). An
/// optional capability of a backend, looked up with `as?`: SQLite and PostgreSQL have it; the in-memory fake does
/// not. A publish's forward is written by `PublishQueue.enqueuePublish` with the job (`PublishJob.beamsForward`), in
/// the same transaction, so an accepted publish is forwarded even if the process dies before the next line runs.
package protocol BeamsForwardQueue: Sendable {
    /// Durably queues `forward`, due at `now`, unless one with the same (instance, kind, key) exists.
    /// - Returns: whether it was queued (false: already there).
    func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool
    /// Claims up to `limit` pending forwards due at `now`, oldest due first, each hidden from other callers for
    /// `leaseDuration` (a crash mid-attempt makes it again later: at least once).
    func dueBeamsForwards(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingBeamsForward]
    /// Records an attempt's outcome. - Throws: `PushStoreError.notFound` when it is not pending.
    func markBeamsForward(_ id: Int64, outcome: BeamsForwardOutcome, now: Date) async throws
    /// When the next pending forward is due; nil when none is pending.
    func nextBeamsForwardDue() async throws -> Date?
    /// The forward of a local publish, if it had one.
    func beamsForward(instanceID: String, publishID: String) async throws -> BeamsForwardRecord?
}
