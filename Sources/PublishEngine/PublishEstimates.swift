import Locking
import Observability

/// The completion estimates of the runs on this node, for `/metrics`: per instance, the longest time left of its
/// running publishes (`push_publish_estimate_remaining_seconds{beams_instance}`; 0 when none has an estimate). One series
/// per configured instance that ran a publish here, whatever the number of publishes, so the label set stays
/// bounded. A shard's run counts its own shard: the publish-wide estimate is in its status (docs/API.md).
final class PublishEstimates: Sendable {
    private struct Entry {
        var instance: String
        var seconds: Double?
    }

    private let runs = Locked<[ObjectIdentifier: Entry]>([:])
    private let metrics: Metrics

    init(metrics: Metrics) {
        self.metrics = metrics
    }

    /// `run` (of `instance`) now estimates `seconds` left (nil: no estimate).
    func update(_ run: PublishRun, instance: String, seconds: Double?) {
        let longest = runs.withLock { runs -> Double in
            runs[ObjectIdentifier(run)] = Entry(instance: instance, seconds: seconds)
            return Self.longest(of: instance, in: runs)
        }
        metrics.set(.publishEstimateRemainingSeconds, ["beams_instance": instance], to: longest)
    }

    /// `run` stopped sending.
    func remove(_ run: PublishRun) {
        let gauge = runs.withLock { runs -> (String, Double)? in
            guard let entry = runs.removeValue(forKey: ObjectIdentifier(run)) else { return nil }
            return (entry.instance, Self.longest(of: entry.instance, in: runs))
        }
        if let (instance, longest) = gauge {
            metrics.set(.publishEstimateRemainingSeconds, ["beams_instance": instance], to: longest)
        }
    }

    private static func longest(of instance: String, in runs: [ObjectIdentifier: Entry]) -> Double {
        runs.values.filter { $0.instance == instance }.compactMap(\.seconds).max().map { $0.rounded() } ?? 0
    }
}
