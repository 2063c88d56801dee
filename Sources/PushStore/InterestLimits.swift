/// Per-instance bounds on what interest writes may store, enforced by the store inside the write's transaction
/// (on PostgreSQL across nodes: writers of one instance take turns on its count row). Anonymous clients choose
/// both numbers, so without them a client obeying every rate limit could fill the disk (docs/SECURITY.md).
package struct InterestLimits: Sendable, Equatable {
    /// (device, interest) pairs the instance may hold.
    package var maxSubscriptionsPerInstance: Int
    /// Distinct interest names the instance may hold (a name lives while a device follows it).
    package var maxInterestsPerInstance: Int

    package init(maxSubscriptionsPerInstance: Int, maxInterestsPerInstance: Int) {
        self.maxSubscriptionsPerInstance = maxSubscriptionsPerInstance
        self.maxInterestsPerInstance = maxInterestsPerInstance
    }

    /// No bound: the operator's own tools and tests.
    package static let unlimited = InterestLimits(maxSubscriptionsPerInstance: .max, maxInterestsPerInstance: .max)

    /// The error for a write that took the instance from `before` to `after` (subscriptions, distinct names), or
    /// nil when it may commit. A write that does not grow a count over its cap always passes, so a device can
    /// still shrink its set while the instance is full (or after the operator lowered a cap).
    package func violation(
        before: (subscriptions: Int64, interests: Int64),
        after: (subscriptions: Int64, interests: Int64)
    ) -> PushStoreError? {
        let subscriptionCap = Int64(clamping: maxSubscriptionsPerInstance)
        if after.subscriptions > subscriptionCap && after.subscriptions > before.subscriptions {
            return .subscriptionLimitReached
        }
        if after.interests > Int64(clamping: maxInterestsPerInstance) && after.interests > before.interests {
            return .interestLimitReached
        }
        return nil
    }
}
