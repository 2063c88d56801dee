/// Counter increments and histogram counts gathered without `Metrics`' lock, then applied under one acquisition of
/// it (`Metrics.apply(_:)`).
///
/// Why: the HTTP loops complete tens of thousands of requests per second, each counted in two families. Taken per
/// request, the registry lock shared by every loop was a tenth of the server's time (docs/BENCHMARKS.md, HTTP);
/// per batch of requests it is noise. The caller merges equal series first, so a batch holds each series once.
package struct MetricsBatch: Sendable {
    struct Counter {
        var metric: CounterMetric
        var key: String
        var labels: [(String, String)]
        var amount: Double
    }

    struct Histogram {
        var metric: HistogramMetric
        var key: String
        var labels: [(String, String)]
        var counts: HistogramCounts
    }

    private(set) var counters: [Counter] = []
    private(set) var histograms: [Histogram] = []

    package init() {}

    /// Whether the batch holds nothing to apply.
    package var isEmpty: Bool { counters.isEmpty && histograms.isEmpty }

    /// Adds `amount` to a counter series.
    package mutating func increment(_ metric: CounterMetric, _ labels: [(String, String)], by amount: Double = 1) {
        metric.family.check(labels.lazy.map(\.0))
        counters.append(Counter(metric: metric, key: Metrics.labelString(labels), labels: labels, amount: amount))
    }

    /// Adds `counts` (observations tallied for one series) to a histogram series.
    package mutating func observe(_ metric: HistogramMetric, _ labels: [(String, String)], _ counts: HistogramCounts) {
        metric.family.check(labels.lazy.map(\.0))
        histograms.append(Histogram(metric: metric, key: Metrics.labelString(labels), labels: labels, counts: counts))
    }
}

/// Observations of one histogram series, tallied per bucket: what `Metrics.observe` would add, for many values.
///
/// Made with the bucket bounds of the family it is applied to (`HistogramMetric.buckets`); `Metrics.apply(_:)`
/// ignores counts made for other bounds (they cannot be split into the family's buckets exactly).
package struct HistogramCounts: Sendable {
    /// Upper bounds, ascending.
    package let buckets: [Double]
    /// Observations per bucket (not cumulative); those above the last bound are only in `count`.
    package private(set) var counts: [UInt64]
    package private(set) var sum: Double = 0
    package private(set) var count: UInt64 = 0

    package init(buckets: [Double]) {
        self.buckets = buckets
        counts = Array(repeating: 0, count: buckets.count)
    }

    /// Counts one observation.
    package mutating func record(_ value: Double) {
        if let index = buckets.firstIndex(where: { value <= $0 }) { counts[index] += 1 }
        sum += value
        count += 1
    }
}
