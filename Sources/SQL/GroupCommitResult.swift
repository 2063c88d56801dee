/// What one group transaction came to (`GroupCommit.run`). Nothing of it has been told to any caller yet: the
/// backend runs the completions and failures, and answers a failed batch, after it learnt what it needs to report.
package enum GroupCommitResult<Write> {
    /// The transaction committed. Every write of `writes` (in the order taken) is in exactly one of the other three:
    /// kept (its completion, in `completions` in order), rolled back and failed with its error (`failed`), or
    /// rolled back to run again in a transaction of its own (`again`).
    case committed(
        writes: [Write], completions: [() -> Void], failed: [(write: Write, error: any Error)], again: [Write])
    /// Nothing of the batch is stored: BEGIN, a savepoint statement or COMMIT failed, a write's error aborted the
    /// batch, or the backend closed the transaction under a failed write. Every write of `writes` (all taken, run or
    /// not) fails with `error`, and no completion runs. `commitSent`: the error came from COMMIT, so on a server that
    /// may have committed before the connection broke the outcome is unknown (never replay such a batch).
    case failed(writes: [Write], error: any Error, commitSent: Bool)

    /// Every write the transaction took, in order, whether it committed or not.
    package var writes: [Write] {
        switch self {
        case .committed(let writes, _, _, _), .failed(let writes, _, _): writes
        }
    }
}
