import Locking
import Observability

/// The completion estimates of the runs on this node, for `/metrics`: per instance, the longest time left of its
/// running publishes (`push_publish_estimate_remaining_seconds{beams_instance}`; 0 when none has an estimate). One series
/// per configured instance that ran a publish here, whatever the number of publishes, so the label set stays
/// bounded. A shard's run counts its own shard: the publish-wide estimate is in its status (docs/API.md).
///
/// The gauge is written when `/metrics` is read, for the instances whose runs changed since: a gauge update costs
/// ~4,500 instructions (docs/BENCHMARKS.md "The engine's run of a publish with no targets"), and every run updated
/// it at least twice (its first estimate, its end). The values read are the same: each instance's longest as it is.
final class PublishEstimates: Sendable {
    private struct Entry {
        var instance: String
        var seconds: Double?
    }

    private struct State {
        var runs: [ObjectIdentifier: Entry] = [:]
        /// Instances whose gauge changed since `/metrics` was last read.
        var changed: Set<String> = []
    }

    private let state = Locked(State())

    init(metrics: Metrics) {
        metrics.addCollector { [weak self] metrics in self?.report(to: metrics) }
    }

    /// `run` (of `instance`) now estimates `seconds` left (nil: no estimate).
    func update(_ run: PublishRun, instance: String, seconds: Double?) {
        state.withLock { state in
            state.runs[ObjectIdentifier(run)] = Entry(instance: instance, seconds: seconds)
            state.changed.insert(instance)
        }
    }

    /// `run` stopped sending.
    func remove(_ run: PublishRun) {
        state.withLock { state in
            guard let entry = state.runs.removeValue(forKey: ObjectIdentifier(run)) else { return }
            state.changed.insert(entry.instance)
        }
    }

    /// The longest estimate of `instance`'s runs, as the gauge shows it (0: none).
    func longest(of instance: String) -> Double {
        state.withLock { Self.longest(of: instance, in: $0.runs) }
    }

    private func report(to metrics: Metrics) {
        let gauges = state.withLock { state -> [(String, Double)] in
            defer { state.changed.removeAll() }
            return state.changed.map { ($0, Self.longest(of: $0, in: state.runs)) }
        }
        for (instance, longest) in gauges {
            metrics.set(.publishEstimateRemainingSeconds, ["beams_instance": instance], to: longest)
        }
    }

    private static func longest(of instance: String, in runs: [ObjectIdentifier: Entry]) -> Double {
        runs.values.filter { $0.instance == instance }.compactMap(\.seconds).max().map { $0.rounded() } ?? 0
    }
}
