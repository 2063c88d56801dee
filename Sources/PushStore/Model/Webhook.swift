import Foundation

/// A webhook call to make, durably queued in the outbox.
public struct WebhookRequest: Sendable, Equatable {
    public var url: String
    public var body: Data
    public var headers: [String: String]

    public init(url: String, body: Data, headers: [String: String] = [:]) {
        self.url = url
        self.body = body
        self.headers = headers
    }
}

/// A webhook that is due, claimed for one attempt.
public struct PendingWebhook: Sendable, Equatable {
    public var id: Int64
    public var request: WebhookRequest
    /// Attempts made before this one.
    public var attempts: Int
    public var createdAt: Date

    /// Backends build these; so do tests.
    public init(id: Int64, request: WebhookRequest, attempts: Int, createdAt: Date) {
        self.id = id
        self.request = request
        self.attempts = attempts
        self.createdAt = createdAt
    }
}

/// What happened to a webhook attempt.
public enum WebhookOutcome: Sendable, Equatable {
    case delivered
    /// Try again at `at`.
    case retry(at: Date, error: String?)
    /// Stop trying.
    case gaveUp(error: String?)
    /// Not attempted (the outbox had no room for its destination): due again at `until`, no attempt spent.
    case deferred(until: Date)
}

/// Rows deleted by `PushStorage.purge`.
public struct PurgeResult: Sendable, Equatable {
    public var publishes: Int
    public var events: Int
    public var webhooks: Int
    public var devices: Int
    /// Devices expired because nobody delivered to them (`RetentionStore.purgeUndeliveredDevices`); set by the
    /// janitor, not by `purge`.
    public var undeliveredDevices: Int

    public init(publishes: Int = 0, events: Int = 0, webhooks: Int = 0, devices: Int = 0, undeliveredDevices: Int = 0) {
        self.publishes = publishes
        self.events = events
        self.webhooks = webhooks
        self.devices = devices
        self.undeliveredDevices = undeliveredDevices
    }
}
