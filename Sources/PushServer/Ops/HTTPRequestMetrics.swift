import HTTPServer
import Observability

/// Feeds `push_http_requests_total` (by route, method, status) and `push_http_request_duration_seconds` (by
/// route) from the HTTP servers' batches of completed requests (`HTTPServer`'s `onRequestsCompleted`).
///
/// A batch is tallied on the loop thread without any lock — equal series merged, durations counted into the
/// histogram's buckets — and applied with one `Metrics.apply`, so the loops take the registry lock once per batch
/// instead of twice per request. Counts stay exact: every request is in exactly one batch.
struct HTTPRequestMetrics: Sendable {
    let metrics: Metrics
    /// The duration histogram's bucket bounds.
    private let durationBuckets = HistogramMetric.httpRequestDuration.buckets

    init(metrics: Metrics) {
        self.metrics = metrics
    }

    /// Counts `records` (one loop's batch).
    func record(_ records: [AccessLogRecord]) {
        // Linear search: a batch has few distinct series (routes × methods × statuses seen in one loop iteration)
        // and at most `records.count` of them, and comparing route patterns (the router's own strings) is cheaper
        // than hashing them.
        var counts: [(route: String, method: String, status: Int, count: Int)] = []
        var durations: [(route: String, counts: HistogramCounts)] = []
        for record in records {
            if let i = counts.firstIndex(where: {
                $0.status == record.status && $0.route == record.route && $0.method == record.method
            }) {
                counts[i].count += 1
            } else {
                counts.append((record.route, record.method, record.status, 1))
            }
            let seconds =
                Double(record.duration.components.seconds)
                + Double(record.duration.components.attoseconds) / 1e18
            if let i = durations.firstIndex(where: { $0.route == record.route }) {
                durations[i].counts.record(seconds)
            } else {
                var tally = HistogramCounts(buckets: durationBuckets)
                tally.record(seconds)
                durations.append((record.route, tally))
            }
        }
        var batch = MetricsBatch()
        // Route patterns come from the router (or `-`); methods and statuses from fixed sets (MetricLabel).
        for series in counts {
            batch.increment(
                .httpRequests,
                [
                    ("route", series.route), ("method", MetricLabel.method(series.method)),
                    ("status", MetricLabel.status(series.status)),
                ], by: Double(series.count))
        }
        for series in durations { batch.observe(.httpRequestDuration, [("route", series.route)], series.counts) }
        metrics.apply(batch)
    }
}
