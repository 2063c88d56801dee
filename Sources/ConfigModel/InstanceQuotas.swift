import PushStore

/// An instance's quotas (`instances[].quotas`, docs/OPERATIONS.md "Many apps: quotas"). Each is off (unlimited)
/// unless set.
///
/// - `devices`: registered devices; a registration of a new token beyond it is refused (an existing token still
///   re-registers). Counted by the store, so it holds across nodes.
/// - `publishesPerDay`: publishes accepted per UTC day; the next one is answered 429 with `Retry-After` until
///   00:00 UTC. Counted by the store in the publish's transaction, so it holds across nodes.
/// - `notificationsPerMinute`: a provider budget per platform (FCM allows a project 600,000 messages a minute).
///   Not a refusal: the engine paces the instance's deliveries to that platform. Each node takes an equal share
///   (budget ÷ live nodes), so together they stay within it.
package struct InstanceQuotas: Sendable, Equatable {
    package var devices: Int?
    package var publishesPerDay: Int?
    package var notificationsPerMinute: [Platform: Int] = [:]

    package init(devices: Int? = nil, publishesPerDay: Int? = nil, notificationsPerMinute: [Platform: Int] = [:]) {
        self.devices = devices
        self.publishesPerDay = publishesPerDay
        self.notificationsPerMinute = notificationsPerMinute
    }

    /// Whether any quota is set.
    package var isEmpty: Bool { devices == nil && publishesPerDay == nil && notificationsPerMinute.isEmpty }
}
