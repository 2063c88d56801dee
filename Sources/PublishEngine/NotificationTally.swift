import Observability
import PushStore

/// `push_notifications_total{platform,status,reason}` counted under a run's own lock (`PublishRun.completed`) and
/// added to `/metrics` in batches: a result then builds no label string and takes no lock of the registry's; the
/// registry learns of a batch every `batch` results, at each checkpoint and when the run ends.
struct NotificationTally: Sendable {
    /// Results counted before a batch goes to `/metrics` (a fan-out has a handful of series, so a batch costs a
    /// handful of label strings instead of one per result).
    static let batch = 256

    private struct Series: Hashable {
        var platform: Platform
        var status: Int
        var reason: String?
    }

    private var counts: [Series: Int] = [:]
    /// The series of the latest results and how many of them came in a row, not yet in `counts`: a fan-out's
    /// results are nearly all of one series, and comparing it with the last one costs less than hashing it into the
    /// dictionary for every result (about 600 instructions per notification; docs/BENCHMARKS.md, issue 26).
    private var last: Series?
    private var lastCount = 0
    /// Results counted since the last `take`.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func add(_ platform: Platform, status: Int, reason: String?) {
        let series = Series(platform: platform, status: status, reason: reason)
        if series == last {
            lastCount += 1
        } else {
            flushLast()
            last = series
            lastCount = 1
        }
        count += 1
    }

    private mutating func flushLast() {
        guard let last, lastCount > 0 else { return }
        counts[last, default: 0] += lastCount
        lastCount = 0
    }

    /// Everything counted so far; leaves the tally empty.
    mutating func take() -> NotificationTally {
        flushLast()
        defer { self = NotificationTally() }
        return self
    }

    /// Adds the counts to `metrics` under one acquisition of its lock.
    func apply(to metrics: Metrics) {
        guard !isEmpty else { return }
        var tally = self
        tally.flushLast()
        var batch = MetricsBatch()
        for (series, amount) in tally.counts {
            batch.increment(
                .notifications,
                [
                    ("platform", MetricLabel.platform(series.platform)),
                    ("status", MetricLabel.status(series.status)),
                    ("reason", MetricLabel.reason(series.reason)),
                ], by: Double(amount))
        }
        metrics.apply(batch)
    }
}
