import APNsClient
import Logging

/// What the engine's parts (scheduler, runner, feeder, finisher) share: their collaborators and the settings.
struct PublishContext: Sendable {
    let store: any PublishEngineStore
    /// The APNs sender.
    let sender: any APNsSending
    /// The FCM and Web Push senders; nil when the process has none (deliveries are then recorded as not sent).
    let fcmSender: (any FCMSending)?
    let webSender: (any WebPushSending)?
    let settings: PublishEngine.Settings
    let metrics: Metrics
    let webhooks: any PublishWebhooks
    /// APNs reachability, for `/ready`.
    let apnsHealth: APNsHealth
    /// Notifications per minute per instance, for the console's chart.
    let activity: DeliveryActivity
    let logger: Logger
    /// By lower-cased instance id.
    private let instances: [String: InstanceRuntime]

    init(store: any PublishEngineStore, sender: any APNsSending, fcmSender: (any FCMSending)?,
         webSender: (any WebPushSending)?, instances: [InstanceRuntime], settings: PublishEngine.Settings,
         metrics: Metrics, webhooks: any PublishWebhooks, logger: Logger) {
        self.store = store
        self.sender = sender
        self.fcmSender = fcmSender
        self.webSender = webSender
        self.settings = settings
        self.metrics = metrics
        self.webhooks = webhooks
        self.logger = logger
        apnsHealth = APNsHealth()
        activity = DeliveryActivity(instanceIDs: instances.map(\.config.id))
        var byID: [String: InstanceRuntime] = [:]
        for instance in instances { byID[instance.config.id.lowercased()] = instance }
        self.instances = byID
    }

    /// The configured instance `id` (case-insensitive), nil when it is no longer configured.
    func instance(_ id: String) -> InstanceRuntime? { instances[id.lowercased()] }
}
