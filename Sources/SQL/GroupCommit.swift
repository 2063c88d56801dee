/// The group-commit writer core of both store backends: runs writes in ONE transaction, each in a savepoint of its
/// own, and commits once, so a thousand concurrent writes cost one commit (one fsync, one WAL flush) and a write that
/// fails is rolled back alone while the others commit.
///
/// It answers no caller: `run` returns what to run after COMMIT (`GroupCommitResult`), so a caller is resumed only
/// once its write is durable, and a backend reports what the batch showed (its health) before anyone hears of it.
/// Synchronous and free of any database: the backend's thread calls it with its connection's `GroupTransaction`,
/// its writes and its policy, which is all that differs between SQLite and PostgreSQL:
///
/// - the feed: `more` hands over further writes while `budget` holds (SQLite's slices of its one writer's queue);
///   a fixed batch passes none (PostgreSQL's threads each commit what they took);
/// - the classification of a write's error (`GroupWriteFailure`): fail it after the commit, run it again alone,
///   or abort the batch;
/// - whether the transaction is still open after a write failed (`GroupTransaction.isOpen`);
/// - what happens after a failed batch (PostgreSQL replays it when COMMIT was not sent; SQLite fails every caller).
package struct GroupCommit<Write> {
    /// How far a transaction takes writes beyond the first ones.
    package let budget: GroupCommitBudget
    /// About how many rows a write changes (at least 1), counted against `budget.cost`.
    private let cost: (Write) -> Int
    /// A monotonic clock's reading, for `budget.duration`.
    private let now: () -> Duration

    /// A core that feeds a transaction while `budget` holds.
    /// - Parameters:
    ///   - cost: about how many rows a write changes, counted against `budget.cost`.
    ///   - now: a monotonic clock's reading (time since any fixed origin), read at BEGIN and before each feed.
    package init(budget: GroupCommitBudget, cost: @escaping (Write) -> Int, now: @escaping () -> Duration) {
        self.budget = budget
        self.cost = cost
        self.now = now
    }

    /// A core for fixed batches: a transaction holds the writes it is given and no more.
    package init() {
        self.init(budget: .fixed, cost: { _ in 1 }, now: { .zero })
    }

    /// Runs `first` and whatever `more` feeds in one transaction of `transaction` and commits it.
    ///
    /// Each write runs in a savepoint. One that throws is classified by `classify`: unless that aborts the batch or
    /// the transaction is no longer open, it is rolled back to its savepoint and the next one runs. Once every write
    /// taken has run, `more` is asked for the room left while the budget holds; an empty answer ends the feed.
    /// - Parameters:
    ///   - more: further writes, at most `maxCount` of them and about `maxCost` rows (asked only while `budget` holds).
    ///   - write: runs one write inside its savepoint and returns what to do once the transaction committed.
    ///     `followsKeptWrites`: writes before it in this transaction were kept, so their row locks are held.
    ///   - classify: what the failure of a write means for it and the batch.
    package func run<Transaction: GroupTransaction>(
        _ first: [Write], in transaction: Transaction,
        more: (_ maxCount: Int, _ maxCost: Int) -> [Write] = { _, _ in [] },
        write: (Write, _ followsKeptWrites: Bool) throws -> () -> Void,
        classify: (any Error, Write) -> GroupWriteFailure
    ) -> GroupCommitResult<Write> {
        var writes = first
        var completions: [() -> Void] = []
        completions.reserveCapacity(first.count)
        var failed: [(write: Write, error: any Error)] = []
        var again: [Write] = []
        var commitSent = false
        let started = now()
        do {
            try transaction.begin()
            var next = 0
            var rows = 0
            while true {
                if next == writes.count {
                    guard writes.count < budget.count, rows < budget.cost, now() - started < budget.duration
                    else { break }
                    let fed = more(budget.count - writes.count, budget.cost - rows)
                    if fed.isEmpty { break }
                    writes.append(contentsOf: fed)
                }
                let current = writes[next]
                next += 1
                rows += cost(current)
                try transaction.savepoint()
                do {
                    completions.append(try write(current, !completions.isEmpty))
                } catch {
                    let failure = classify(error, current)
                    if failure == .abortBatch || !transaction.isOpen { throw error }
                    try transaction.rollbackToSavepoint()
                    if failure == .runAgainAlone {
                        again.append(current)
                    } else {
                        failed.append((current, error))
                    }
                }
                try transaction.releaseSavepoint()
            }
            commitSent = true
            try transaction.commit()
        } catch {
            transaction.rollback()
            return .failed(writes: writes, error: error, commitSent: commitSent)
        }
        return .committed(writes: writes, completions: completions, failed: failed, again: again)
    }
}
