import APNsClient
import Logging
import Observability
import PushStore

/// What the engine's parts (scheduler, runner, feeder, finisher) share: their collaborators and the settings.
///
/// A class, not a struct: every part, lane and recorder keeps it, and copying a struct of fifteen references
/// retained each of them (and released them at the end), ~13 K instructions for a publish's run with no targets
/// (docs/BENCHMARKS.md "The engine's run of a publish with no targets"); a copy of a class is one retain.
final class PublishContext: Sendable {
    let store: any PublishEngineStore
    /// The APNs sender (one for every instance; FCM and Web Push senders are per instance, in `InstanceRuntime`).
    let sender: any APNsSending
    let settings: PublishEngine.Settings
    let metrics: Metrics
    let webhooks: any PublishWebhooks
    /// APNs reachability, for `/ready`.
    let apnsHealth: APNsHealth
    /// Notifications per minute per instance, for the console's chart.
    let activity: DeliveryActivity
    let logger: Logger
    /// Sends broadcast publishes (channel management goes through it too, from the API); nil: none configured.
    let broadcaster: (any BroadcastSending)?
    /// How broadcasts are retried (the APNs client's policy, same limits).
    let broadcastRetryPolicy: APNsRetryPolicy
    /// The node's publish slots: which claimed run sends next (`JobScheduler` admits, `PublishPacer` parks).
    let slots: PublishSlots
    /// The instances' provider budgets (`quotas.notificationsPerMinute`), paced at this node's share.
    let budgets: DeliveryBudgets
    /// The completion estimates of this node's runs, for `/metrics`.
    let estimates: PublishEstimates
    /// The instances served now: a run looks its instance up once, when it starts, and keeps those senders.
    let directory: InstanceDirectory
    /// Plans built at intake on this node, for the runs that claim their jobs here.
    let plans: PlanHandoff

    /// - Parameter directory: the served set (run-time instances come and go); nil: `instances`, fixed.
    init(
        store: any PublishEngineStore, sender: any APNsSending, instances: [InstanceRuntime],
        settings: PublishEngine.Settings, metrics: Metrics, webhooks: any PublishWebhooks, logger: Logger,
        broadcaster: (any BroadcastSending)? = nil, broadcastRetryPolicy: APNsRetryPolicy = APNsRetryPolicy(),
        directory: InstanceDirectory? = nil, plans: PlanHandoff = PlanHandoff()
    ) {
        self.store = store
        self.plans = plans
        self.broadcaster = broadcaster
        self.broadcastRetryPolicy = broadcastRetryPolicy
        self.sender = sender
        self.settings = settings
        slots = PublishSlots(
            slots: settings.concurrentPublishes, expressSlots: settings.expressPublishSlots,
            maxParked: settings.maxParkedPublishes,
            weights: Dictionary(
                instances.map { ($0.config.id.lowercased(), $0.config.publishWeight) },
                uniquingKeysWith: { first, _ in first }),
            metrics: metrics)
        self.metrics = metrics
        budgets = DeliveryBudgets(instances: instances, slots: slots, parkAfter: settings.parkAfter, metrics: metrics)
        estimates = PublishEstimates(metrics: metrics)
        self.webhooks = webhooks
        self.logger = logger
        apnsHealth = APNsHealth()
        activity = DeliveryActivity(instanceIDs: instances.map(\.config.id))
        self.directory = directory ?? InstanceDirectory(runtimes: instances)
    }

    /// The served instance `id` (case-insensitive), nil when it is no longer served.
    func instance(_ id: String) -> InstanceRuntime? { directory.runtime(id) }

    /// The served instance `id` held for a run (`InstanceRuntime.release()` when it ends), nil when not served.
    func holdInstance(_ id: String) -> InstanceRuntime? { directory.hold(id) }

    /// Every runtime whose senders shutdown closes: the served ones and retired ones still open.
    var instancesToClose: [InstanceRuntime] { directory.runtimesToClose }

    /// Every served instance.
    var allInstances: [InstanceRuntime] { directory.runtimes }
}
