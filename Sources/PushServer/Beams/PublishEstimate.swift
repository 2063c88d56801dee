import BeamsModel
import Foundation
import JSON
import Logging
import PushStore

/// The completion estimate in a running publish's status (docs/API.md, `estimatedCompletionAt`), from the
/// estimate counters its runs checkpoint (`PublishCounters.Counter.estimate`). The store sums
/// them over the job and its open shards, so the shards that several nodes send at once combine: their targets
/// left add up, and so do their rates.
struct PublishEstimate: Sendable, Equatable {
    /// Targets left (of the runs sending now).
    var remaining: Int64
    /// Answers per second the estimate assumes (all runs together).
    var ratePerSecond: Double
    var completionAt: Date

    /// Nil unless the publish is running (not being cancelled) and its runs reported targets left and a rate.
    init?(_ status: PublishStatus, now: Date) {
        guard status.state == .running, !status.cancelRequested else { return nil }
        let remaining = status.counters[.estimateRemaining] ?? 0
        let rateMilli = status.counters[.estimateRateMilli] ?? 0
        guard remaining > 0, rateMilli > 0 else { return nil }
        self.remaining = remaining
        ratePerSecond = Double(rateMilli) / 1000
        completionAt = now.addingTimeInterval(Double(remaining) / ratePerSecond)
    }

    /// The status members: `estimatedCompletionAt`, `estimateRatePerSecond` (to the thousandth, as stored: a pace
    /// of one a minute is 0.017), `remainingTargets`.
    var members: [String: JSONValue] {
        [
            "estimatedCompletionAt": .string(completionAt.iso8601),
            "estimateRatePerSecond": .double(ratePerSecond),
            "remainingTargets": .int(Int(remaining)),
        ]
    }
}
