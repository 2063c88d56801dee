import Clocks
import ConfigModel
import Locking
import Observability
import PushStore

/// The instances' provider budgets (`quotas.notificationsPerMinute`, FCM's 600,000 messages a minute per project
/// and the like) on this node: one pacer per (instance, platform), shared by every run of the instance, so the
/// instance's publishes together stay within the budget however many run at once.
///
/// Several nodes (PostgreSQL): each node paces at an equal share, `share(budget:liveNodes:)`, from the nodes'
/// heartbeats (as the per-instance API limits are shared out, `Limiters`). The nodes together never exceed the
/// budget; a publish runs on one node (shards of a split publish on several), so while the instance's work sits on
/// fewer nodes than are alive it gets less than the whole budget. A store-wide token bucket would give it all, at
/// the cost of a database round trip per batch of tokens.
package final class DeliveryBudgets: Sendable {
    /// One instance's budget on one platform.
    package final class Budget: Sendable {
        let instanceID: String
        let platform: Platform
        /// Notifications per minute, all nodes together.
        let perMinute: Int
        let pacer: PublishPacer
        private let metrics: Metrics
        /// Tokens granted on this node in the last minute.
        private let window = Locked(MinuteWindow())

        init(instanceID: String, platform: Platform, perMinute: Int, pacer: PublishPacer, metrics: Metrics) {
            self.instanceID = instanceID
            self.platform = platform
            self.perMinute = perMinute
            self.pacer = pacer
            self.metrics = metrics
        }

        /// Waits for the instance's next token on this platform. - Returns: false when the run must stop.
        func waitForToken(_ run: PublishRun) async -> Bool {
            guard await pacer.waitForToken(run) else { return false }
            window.withLock { $0.add(at: Self.second()) }
            metrics.increment(.deliveryBudgetSent, ["beams_instance": instanceID, "platform": platform.rawValue])
            return true
        }

        /// Notifications this node let through the budget in the last 60 seconds (its usage, for the console).
        package var sentLastMinute: Int { window.withLock { $0.total(at: Self.second()) } }

        private static func second() -> Int64 { Int64(MonotonicClock.now() / 1_000_000_000) }
    }

    private struct Key: Hashable {
        var instance: String
        var platform: Platform
    }

    private let budgets: Locked<[Key: Budget]>
    private let metrics: Metrics
    private let slots: PublishSlots?
    private let parkAfter: Duration
    /// The live nodes last told (`setLiveNodes`), for budgets made later.
    private let liveNodes = Locked(1)

    /// - Parameters:
    ///   - slots: the node's publish slots, given up by a run waiting for a budget token.
    init(instances: [InstanceRuntime], slots: PublishSlots?, parkAfter: Duration, metrics: Metrics) {
        self.metrics = metrics
        self.slots = slots
        self.parkAfter = parkAfter
        budgets = Locked([:])
        follow(instances.map(\.config))
    }

    /// Follows the served set (run-time instances, a reload): a new or changed budget gets a pacer of its own at
    /// this node's share, an unchanged one keeps its pacer (and its runs' place), a removed one is dropped. Runs
    /// that already hold a replaced budget finish with it.
    func follow(_ instances: [InstanceConfig]) {
        let nodes = liveNodes.withLock { $0 }
        budgets.withLock { budgets in
            var next: [Key: Budget] = [:]
            for instance in instances {
                for (platform, perMinute) in instance.quotas.notificationsPerMinute {
                    let key = Key(instance: instance.id.lowercased(), platform: platform)
                    guard next[key] == nil else { continue }
                    if let kept = budgets[key], kept.perMinute == perMinute {
                        next[key] = kept
                        continue
                    }
                    next[key] = Budget(
                        instanceID: instance.id, platform: platform, perMinute: perMinute,
                        pacer: PublishPacer(
                            perMinute: Self.share(budget: perMinute, liveNodes: nodes), slots: slots,
                            parkAfter: parkAfter),
                        metrics: metrics)
                }
            }
            budgets = next
        }
        publishShares()
    }

    /// The instance's budget on `platform`, nil when it has none.
    package func budget(instanceID: String, platform: Platform) -> Budget? {
        budgets.withLock { $0[Key(instance: instanceID.lowercased(), platform: platform)] }
    }

    /// Every budget, for the console and the metrics.
    var all: [Budget] { budgets.withLock { Array($0.values) } }

    /// Paces every budget at this node's share of it.
    func setLiveNodes(_ count: Int) {
        liveNodes.withLock { $0 = count }
        for budget in all {
            budget.pacer.retune(perMinute: Self.share(budget: budget.perMinute, liveNodes: count))
        }
        publishShares()
    }

    private func publishShares() {
        for budget in all {
            let labels: KeyValuePairs<String, String> = [
                "beams_instance": budget.instanceID,
                "platform": budget.platform.rawValue,
            ]
            metrics.set(.deliveryBudget, labels, to: Double(budget.perMinute))
            metrics.set(.deliveryBudgetNodeShare, labels, to: Double(budget.pacer.perMinute))
        }
    }

    /// A node's share of a budget: an equal part, rounded down so the nodes together stay within it, and at least
    /// one notification a minute (a budget smaller than the number of nodes is exceeded by at most that many).
    package static func share(budget: Int, liveNodes: Int) -> Int {
        max(1, budget / max(1, liveNodes))
    }
}
