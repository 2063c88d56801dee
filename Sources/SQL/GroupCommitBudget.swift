/// How far `GroupCommit` fills one transaction with writes fed after the first ones: it asks for more while the
/// transaction holds fewer than `count` writes and `cost` rows and has run for less than `duration`.
package struct GroupCommitBudget: Sendable, Equatable {
    /// The most writes in one transaction.
    package var count: Int
    /// The most rows in one transaction, as the writes estimate them.
    package var cost: Int
    /// How long a transaction takes more writes, from its BEGIN.
    package var duration: Duration

    /// - Parameters:
    ///   - count: the most writes in one transaction.
    ///   - cost: the most rows in one transaction, as the writes estimate them.
    ///   - duration: how long a transaction takes more writes, from its BEGIN.
    package init(count: Int, cost: Int, duration: Duration) {
        self.count = count
        self.cost = cost
        self.duration = duration
    }

    /// Nothing beyond the first writes: a fixed batch.
    package static let fixed = GroupCommitBudget(count: 0, cost: 0, duration: .zero)
}
