import Foundation

/// A webhook call to make, durably queued in the outbox.
package struct WebhookRequest: Sendable, Equatable {
    package var url: String
    package var body: Data
    package var headers: [String: String]

    package init(url: String, body: Data, headers: [String: String] = [:]) {
        self.url = url
        self.body = body
        self.headers = headers
    }
}

/// A webhook that is due, claimed for one attempt.
package struct PendingWebhook: Sendable, Equatable {
    package var id: Int64
    package var request: WebhookRequest
    /// Attempts made before this one.
    package var attempts: Int
    package var createdAt: Date

    /// Backends build these; so do tests.
    package init(id: Int64, request: WebhookRequest, attempts: Int, createdAt: Date) {
        self.id = id
        self.request = request
        self.attempts = attempts
        self.createdAt = createdAt
    }
}

/// What happened to a webhook attempt.
package enum WebhookOutcome: Sendable, Equatable {
    case delivered
    /// Try again at `at`.
    case retry(at: Date, error: String?)
    /// Stop trying.
    case gaveUp(error: String?)
    /// Not attempted (the outbox had no room for its destination): due again at `until`, no attempt spent.
    case deferred(until: Date)
}

/// Rows deleted by `PushStorage.purge`.
package struct PurgeResult: Sendable, Equatable {
    package var publishes: Int
    package var events: Int
    package var webhooks: Int
    package var devices: Int
    /// Devices expired because nobody delivered to them (`RetentionStore.purgeUndeliveredDevices`); set by the
    /// janitor, not by `purge`.
    package var undeliveredDevices: Int

    package init(publishes: Int = 0, events: Int = 0, webhooks: Int = 0, devices: Int = 0, undeliveredDevices: Int = 0)
    {
        self.publishes = publishes
        self.events = events
        self.webhooks = webhooks
        self.devices = devices
        self.undeliveredDevices = undeliveredDevices
    }
}
