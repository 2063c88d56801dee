import Clocks
import ConfigModel
import Foundation
import Lifecycle
import Logging
import Observability
import PushStore

/// Keeps `push_quota_usage` current: every `interval` it reads each instance's usage of its store-counted quotas
/// (devices, publishes today) from the store, which holds the count of all nodes, and sets the gauges with the
/// limits. The instances are the served ones at each read (run-time instances and reloads included). Only instances
/// with such a quota are read, and the label is their id, so the series are bounded by the served set. Not run when
/// no instance has one and none can be created at run time (`isWatching` false).
final class QuotaWatch: Service {
    let name = "quota-watch"
    private let store: any QuotaUsageReading
    /// The served instances, read at each refresh.
    private let served: @Sendable () -> [InstanceConfig]
    /// Instances can be created at run time (server-admin keys): watch even when none has a quota yet.
    private let watchAlways: Bool
    private let metrics: Metrics
    private let interval: Duration
    private let clock: @Sendable () -> Date
    private let logger: Logger

    init(
        store: any QuotaUsageReading, instances: @escaping @Sendable () -> [InstanceConfig], watchAlways: Bool = false,
        metrics: Metrics, interval: Duration = .seconds(5), clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger
    ) {
        self.store = store
        served = instances
        self.watchAlways = watchAlways
        self.metrics = metrics
        self.interval = interval
        self.clock = clock
        self.logger = logger
        setLimits(watched)
    }

    /// The served instances with a devices or publishes-per-day quota.
    private var watched: [InstanceConfig] {
        served().filter { instance in QuotaKind.allCases.contains { $0.limit(instance.quotas) != nil } }
    }

    private func setLimits(_ instances: [InstanceConfig]) {
        for instance in instances {
            for kind in QuotaKind.allCases {
                guard let limit = kind.limit(instance.quotas) else { continue }
                metrics.set(.quotaLimit, ["beams_instance": instance.id, "quota": kind.rawValue], to: Double(limit))
            }
        }
    }

    /// Whether any instance has a devices or publishes-per-day quota, or one can be created at run time.
    var isWatching: Bool { watchAlways || !watched.isEmpty }

    func run() async {
        while !Task.isCancelled {
            await refresh()
            do {
                try await MonotonicTimer.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// Reads every watched instance's usage once and sets the gauges; a failed read keeps the last values.
    func refresh() async {
        let day = UTCDay(containing: clock())
        let instances = watched
        setLimits(instances)
        for instance in instances {
            do {
                let usage = try await store.quotaUsage(instanceID: instance.id, day: day)
                for kind in QuotaKind.allCases where kind.limit(instance.quotas) != nil {
                    metrics.set(
                        .quotaUsage, ["beams_instance": instance.id, "quota": kind.rawValue],
                        to: Double(kind.used(usage)))
                }
            } catch {
                logger.debug(
                    "Reading quota usage failed; the gauges keep their last values",
                    ["instance": instance.id, "error": "\(error)"])
            }
        }
    }
}
