import Foundation
import Locking
import PushStore

/// Work for a connection thread.
enum PGOperation: Sendable {
    /// Runs with the thread's session (reads, migrations, the probe: each its own transaction).
    case session(@Sendable (PGSession) -> Void)
    /// A write that may share one transaction with other queued writes (group commit; see `PGSession.group`).
    case write(PGGroupedWrite)
}

/// One write of a group transaction: `run` does its statements inside the group's transaction (in a savepoint of its
/// own) and returns what to do once the transaction committed; `fail` reports that it did not happen.
struct PGGroupedWrite: Sendable {
    let run: @Sendable (PGConnection) throws -> @Sendable () -> Void
    let fail: @Sendable (any Error) -> Void
    /// Errors besides serialization failures and deadlocks after which the write runs again on its own.
    let retryable: @Sendable (PostgreSQLError) -> Bool
}

/// A few dedicated threads, each owning one session (one libpq connection at a time), sharing one queue of
/// operations. Blocking libpq calls run only here, never on the Swift concurrency pool; callers wait on
/// continuations.
///
/// A thread takes what is queued, up to `maxBatch` operations, and commits all the writes among them in one
/// transaction: under load, concurrent writes share one commit (one WAL flush) instead of each paying their own,
/// as SQLite's writer thread does; a lone write is a transaction of one. What a thread takes is shared between
/// tenants (instances; the publish engine is one more, weight 4) by deficit round robin on rows (`FairBatches`), so
/// one instance's backlog of dear writes does not queue another instance's one-row registration behind it.
final class ConnectionPool: Sendable {
    private let queue = FairQueue<PGOperation>(ownWeight: StoreFairness.engineWeight)
    /// The most rows (as operations estimate them) one thread takes at once, unless the first operation alone costs
    /// more.
    static let maxBatchCost = 4096

    /// Starts `size` threads; each opens its connection on first use. `finished` runs once per thread at exit;
    /// `committed` after each group transaction that committed.
    init(
        size: Int, name: String, maxAttempts: Int, maxBatch: Int,
        connect: @escaping @Sendable () throws -> PGConnection,
        finished: @escaping @Sendable () -> Void
    ) {
        for index in 0..<max(1, size) {
            NamedThread.start("\(name)-\(index)", stackSize: 1 << 20) { [queue] in
                let session = PGSession(maxAttempts: maxAttempts, connect: connect)
                while true {
                    let batch = queue.takeBatch(maxCount: max(1, maxBatch), maxCost: Self.maxBatchCost)
                    if batch.isEmpty { break }
                    var writes: [PGGroupedWrite] = []
                    for operation in batch {
                        switch operation {
                        case .session(let run): run(session)
                        case .write(let write): writes.append(write)
                        }
                    }
                    if !writes.isEmpty { session.group(writes) }
                }
                session.drop()
                finished()
            }
        }
    }

    /// Queues an operation of `tenant` (an instance ID; `""` for the engine and housekeeping) costing about `cost`
    /// rows; `false` once the pool is shutting down.
    func submit(_ operation: PGOperation, tenant: String = "", cost: Int = 1) -> Bool {
        queue.push(operation, tenant: tenant, cost: cost)
    }

    /// Stops accepting work; queued operations still run, then the threads close their connections and exit.
    func shutdown() { queue.close() }

    /// Operations waiting for a thread.
    var pending: Int { queue.count }
}
