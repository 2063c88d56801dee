import BeamsModel
import Clocks
import Foundation
import Locking

/// What one run's completion estimate rests on, fixed when its delivery starts: how many targets it has in all,
/// how many earlier runs answered, and its bounds (pacing, a local-time publish's later rounds). The runner's
/// checkpoint loop calls `observe` before each checkpoint; the estimate goes into the checkpoint's counters (the
/// status) and into the node's `PublishEstimates` (`/metrics`).
struct RunProgress: Sendable {
    /// Targets of the run in all (`RunStore.targetCount`); nil: unknown, no estimate, or not counted yet
    /// (`countsAtFirstTarget`).
    var total: Int64? { counted.withLock { $0 } }
    private let counted: Locked<Int64?>
    /// Targets answered by earlier runs of the same job or shard (its claim's `targets` counter).
    let earlier: Int64
    /// `throttlePerMinute / 60`.
    let pacingPerSecond: Double?
    let round: LocalTimeRound?

    /// - Parameter total: the count, nil when unknown or counted later (`count(_:)`).
    init(total: Int64?, earlier: Int64, plan: PublishPlan, round: LocalTimeRound?) {
        counted = Locked(total)
        self.earlier = earlier
        pacingPerSecond = plan.delivery?.throttlePerMinute.map { Double(max(1, $0)) / 60 }
        self.round = round
        // A provider budget (`quotas.notificationsPerMinute`) is per platform and the run's platform mix is unknown
        // here, so `budgetPerSecond` stays nil: the budget's pacing shows in the observed rate instead.
    }

    /// Whether the run's count can wait for its first target (read, not yet sent): a run of `plan` has no estimate
    /// before it has passed a target, whatever its total. Without pacing the estimator has no rate until one
    /// observation saw targets done (`CompletionEstimator.estimate`), and it observes the same whatever the total
    /// (`PublishRun.observeProgress`). So a publish with no targets at all never counts them: the count was a
    /// store read on a reader thread, ~35,000 instructions of every such publish (docs/BENCHMARKS.md "The engine's
    /// run of a publish with no targets"). A paced publish's first estimate rests on the pacing and its total, so
    /// it counts before it sends, as before; so do broadcasts (their feeder reads no target pages).
    static func countsAtFirstTarget(_ plan: PublishPlan) -> Bool {
        guard case .devices = plan.mode else { return false }
        return plan.delivery?.throttlePerMinute == nil
    }

    /// Records the count read once the first target was (`countsAtFirstTarget`).
    func count(_ total: Int64?) { counted.withLock { $0 = total } }

    /// The monotonic clock in seconds: the estimator's time scale.
    static func now() -> Double { Double(MonotonicClock.now()) / 1e9 }

    /// Observes `run`'s progress and refreshes its estimate (before each checkpoint, so the targets left that the
    /// status shows are as fresh as its counts). - Returns: the estimate (nil: none).
    @discardableResult
    func observe(_ run: PublishRun) -> CompletionEstimator.Estimate? {
        let now = Self.now()
        // A later local-time round: the publish is not done before it (wall time turned into the monotonic scale).
        let notBefore = round?.latestRound.map { now + (Double($0) - Date().timeIntervalSince1970) }
        let bounds = CompletionEstimator.Bounds(pacingPerSecond: pacingPerSecond, notBefore: notBefore)
        return run.observeProgress(total: total, done: earlier, bounds: bounds, at: now)
    }
}
