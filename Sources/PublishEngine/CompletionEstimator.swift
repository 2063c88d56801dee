import Foundation

/// When a running publish (or one shard of it) will be done: remaining targets over a smoothed observed rate,
/// bounded by what may limit it. A pure value: time is passed in as seconds on any monotonic scale, so it is
/// tested without sleeping or sockets (`CompletionEstimatorTests`).
///
/// - Observed rate: an exponential moving average of answers per second, one observation per `interval` or more
///   (a checkpoint is every 200 ms; shorter windows are noise), with the start-up bias removed by dividing by
///   `1 − (1 − α)^n` (the EMA starts at 0, so its first values would read low). α = 0.3 follows tqdm's default.
///   Each observation is the answers since the previous one over its own duration, so an irregular sampling
///   interval (a late timer on a loaded machine) does not skew the rate.
/// - Bounds: the rate used is at most the publish's pacing (`throttlePerMinute / 60`) and the instance's provider
///   budget when one is given; the completion is never before `notBefore` (a local-time publish's last round).
/// - Before the first observation: with pacing, the pacing rate alone (a paced publish runs at its pace unless the
///   senders are slower); without, no estimate. An observed rate of 0 (nothing answered for a whole window: a
///   stalled sender, an open breaker) gives no estimate either, rather than an infinite one; and a run with
///   nothing left gives none.
package struct CompletionEstimator: Sendable, Equatable {
    /// The EMA's smoothing factor: weight of the newest observation.
    let alpha: Double
    /// The shortest window between two observations, in seconds.
    let interval: Double
    /// Seconds at the previous observation (nil before `start`).
    private(set) var lastAt: Double?
    /// Answers counted at the previous observation.
    private(set) var lastDone: Int64 = 0
    /// The EMA without its bias correction.
    private(set) var average: Double = 0
    /// Observations folded into `average`.
    private(set) var observations = 0

    init(alpha: Double = 0.3, interval: Double = 2) {
        self.alpha = min(1, max(0.01, alpha))
        self.interval = max(0.001, interval)
    }

    /// What may bound the rate or the completion, from the publish's plan and the instance.
    struct Bounds: Sendable, Equatable {
        /// `throttlePerMinute / 60`: the pacer's rate.
        var pacingPerSecond: Double?
        /// The instance's provider budget for this publish, answers per second.
        var budgetPerSecond: Double?
        /// The completion is not before this moment (seconds, same scale as `now`): a later local-time round.
        var notBefore: Double?

        init(pacingPerSecond: Double? = nil, budgetPerSecond: Double? = nil, notBefore: Double? = nil) {
            self.pacingPerSecond = pacingPerSecond
            self.budgetPerSecond = budgetPerSecond
            self.notBefore = notBefore
        }

        /// The tighter of the pacing and the budget (nil: neither).
        var ceiling: Double? {
            switch (pacingPerSecond, budgetPerSecond) {
            case (let pacing?, let budget?): return min(pacing, budget)
            case (let pacing?, nil): return pacing
            case (nil, let budget?): return budget
            case (nil, nil): return nil
            }
        }
    }

    /// One estimate: when, and the rate it rests on.
    struct Estimate: Sendable, Equatable {
        /// What the rate comes from.
        enum Basis: String, Sendable {
            /// The smoothed observed rate (within the bounds).
            case observed
            /// The pacing (or budget) alone: no observation yet.
            case pacing
        }

        /// Answers per second the estimate assumes.
        var ratePerSecond: Double
        /// Seconds from `now` until the last target is answered.
        var secondsRemaining: Double
        var remaining: Int64
        var basis: Basis
    }

    /// Starts the clock at `now` with `done` answers already counted (a resumed run's earlier ones).
    mutating func start(done: Int64, at now: Double) {
        lastAt = now
        lastDone = done
    }

    /// Folds in the answers counted by `now` when at least `interval` passed since the previous observation.
    /// - Returns: whether an observation was taken.
    @discardableResult
    mutating func observe(done: Int64, at now: Double) -> Bool {
        guard let lastAt else {
            start(done: done, at: now)
            return false
        }
        let elapsed = now - lastAt
        guard elapsed >= interval else { return false }
        let rate = Double(max(0, done - lastDone)) / elapsed
        average = alpha * rate + (1 - alpha) * average
        observations += 1
        self.lastAt = now
        lastDone = done
        return true
    }

    /// The smoothed observed rate, answers per second (nil before the first observation).
    var observedRate: Double? {
        guard observations > 0 else { return nil }
        let correction = 1 - pow(1 - alpha, Double(observations))
        return correction > 0 ? average / correction : nil
    }

    /// The estimate for `remaining` targets at `now`; nil when there is none (see the type's comment).
    func estimate(remaining: Int64, at now: Double, bounds: Bounds = Bounds()) -> Estimate? {
        guard remaining > 0 else { return nil }
        let rate: Double
        let basis: Estimate.Basis
        if let observed = observedRate {
            rate = bounds.ceiling.map { min(observed, $0) } ?? observed
            basis = .observed
        } else if let ceiling = bounds.pacingPerSecond.map({ min($0, bounds.budgetPerSecond ?? $0) }) {
            rate = ceiling
            basis = .pacing
        } else {
            return nil
        }
        guard rate > 0, rate.isFinite else { return nil }
        var seconds = Double(remaining) / rate
        if let notBefore = bounds.notBefore { seconds = max(seconds, notBefore - now) }
        return Estimate(ratePerSecond: rate, secondsRemaining: seconds, remaining: remaining, basis: basis)
    }
}
