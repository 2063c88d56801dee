import Clocks
import Foundation
import Locking
import Logging
import PushStore
import SQL

/// Work for the writer thread. `run` executes inside the shared group-commit transaction (in a savepoint of its own,
/// rolled back if it throws) and returns what to do once the transaction committed.
struct WriteOperation: Sendable {
    let run: @Sendable (SQLiteConnection) throws -> @Sendable () -> Void
    /// Called, after COMMIT, with what `run` threw, or with the error of a shared transaction that failed.
    let fail: @Sendable (any Error) -> Void
    /// A probe's commit proves the store can write even though it changes no rows.
    var isProbe = false
    /// Whose write this is, for the writer's fair share (`FairBatches`): an instance ID, or `""` for the publish
    /// engine and housekeeping.
    var tenant = ""
    /// Roughly the rows it writes (at least 1): what it costs the tenant's share and the batch.
    var cost = 1
    /// The next step of a larger write (an interest set written in steps): it takes turns with the backlog, never
    /// a newcomer's place (`FairBatches`).
    var continuing = false
}

/// Work for a reader thread.
struct ReadOperation: Sendable {
    let run: @Sendable (SQLiteConnection) -> Void
}

/// Counters that show how well group commit batches writes.
package struct WriterStatistics: Sendable, Equatable {
    /// Transactions committed (or attempted) by the writer.
    package var transactions: Int = 0
    /// Write operations run inside them.
    package var operations: Int = 0
}

/// The single writer: one connection, one thread, group commit.
///
/// Callers queue operations; the thread runs them in ONE transaction (each operation inside its own savepoint, so
/// one failure does not undo the others; the loop is `GroupCommit`, shared with PostgreSQL), commits once, and only
/// then resumes every caller. A thousand concurrent
/// writers therefore cost a handful of fsyncs, and a caller that was resumed knows its row is committed.
///
/// The transaction is filled in slices, chosen fairly between tenants by `FairBatches`: after each slice the writer
/// takes more while it has run less than `maxBatchDuration` and holds fewer than `maxBatch` operations and
/// `maxBatchCost` rows. A write that arrives while a transaction is open can still join it, and one that arrives
/// too late waits for at most the budget, the slice in progress and one COMMIT, however many rows another tenant
/// queued: the bound that matters once one write costs milliseconds (5,000 interest names are 5,000 random index
/// pages, issue 25). A write of a tenant that had nothing queued (a newcomer, `FairBatches`) does better: it goes
/// into the next slice, which holds only newcomers' writes, and the transaction then commits, so it waits for the
/// slice in progress and one COMMIT, not the budget.
///
/// The connection lives only on the thread; `stats` is `Locked`.
final class WriterThread: Sendable {
    private let queue = FairQueue<WriteOperation>(ownWeight: StoreFairness.engineWeight)
    private let stats = Locked(WriterStatistics())
    /// What one slice of a transaction takes at most (the budget is checked between slices): one step of a large
    /// interest write (`SQLitePushStore.interestStep`), or a few one-row writes per lock round trip. A newcomer's
    /// write waits for the slice in progress, so a slice is kept to about a millisecond.
    static let sliceCount = 16
    static let sliceCost = 32

    /// Starts the thread. `open` runs on it; `ready` reports whether it succeeded; `finished` runs last;
    /// `betweenTransactions` runs on it after each transaction's callers were resumed (the WAL's restart);
    /// `health` hears after each batch whether it showed the store writable or unavailable (neither, for a
    /// batch that changed nothing). After a failure, a commit ends the outage only while `hasRoom` says the file
    /// system has room (`FileSystemRoom`): at the edge of a full disk a small commit can still fit.
    init(
        maxBatch: Int,
        maxBatchCost: Int,
        maxBatchDuration: Duration,
        betweenTransactions: @escaping @Sendable (SQLiteConnection) -> Void = { _ in },
        logger: Logger,
        health: @escaping @Sendable (StoreHealthEvent) -> Void,
        hasRoom: @escaping @Sendable () -> Bool = { true },
        open: @escaping @Sendable () throws -> SQLiteConnection,
        ready: @escaping @Sendable (Result<Void, any Error>) -> Void,
        finished: @escaping @Sendable ((any Error)?) -> Void
    ) {
        NamedThread.start("store-writer", stackSize: 1 << 20) { [queue, self] in
            let connection: SQLiteConnection
            do {
                connection = try open()
            } catch {
                queue.close()
                ready(.failure(error))
                finished(nil)
                return
            }
            ready(.success(()))
            let core = GroupCommit<WriteOperation>(
                budget: GroupCommitBudget(
                    count: maxBatch, cost: maxBatchCost, duration: maxBatchDuration),
                cost: \.cost, now: { .nanoseconds(MonotonicClock.now()) })
            var gate = HealthGate(hasRoom: hasRoom, health: health)
            while true {
                let first = queue.takeSlice(
                    waiting: true, maxCount: min(maxBatch, Self.sliceCount), maxCost: min(maxBatchCost, Self.sliceCost))
                if first.items.isEmpty { break }
                self.runBatch(
                    first.items, newcomer: first.newcomer, core: core, on: connection, logger: logger, gate: &gate)
                betweenTransactions(connection)
            }
            do {
                try connection.close()
                finished(nil)
            } catch {
                finished(error)
            }
        }
    }

    /// Queues an operation; `false` once the writer is shutting down. An `urgent` one goes ahead of the queued
    /// ones: it waits only for the group transaction in progress.
    func submit(_ operation: WriteOperation, urgent: Bool = false) -> Bool {
        if urgent { return queue.pushUrgent(operation) }
        return queue.push(operation, tenant: operation.tenant, cost: operation.cost, continuing: operation.continuing)
    }

    /// Stops accepting work; queued operations still run before the thread exits.
    func shutdown() { queue.close() }

    /// Operations waiting for the writer.
    var pending: Int { queue.count }

    var statistics: WriterStatistics {
        stats.withLock { $0 }
    }

    /// What the writer tells `health`: every failure, and a commit unless it follows a failure on a file system
    /// without room. A commit that fit into what failed ones left allocated at the end of the WAL proves nothing
    /// on a full disk, so the outage goes on, silently, until a commit finds room (the watchdog probes each second).
    private struct HealthGate {
        let hasRoom: @Sendable () -> Bool
        let health: @Sendable (StoreHealthEvent) -> Void
        /// Whether the last batch that showed anything showed the store unavailable.
        var failing = false

        mutating func report(_ event: StoreHealthEvent) {
            switch event {
            case .failed:
                failing = true
            case .wrote:
                if failing && !hasRoom() { return }
                failing = false
            }
            health(event)
        }
    }

    /// Runs one group transaction: `first`, then more slices while `core`'s budget holds. What it showed about the
    /// store's health is reported before any caller is resumed, so a caller that saw a failure finds the store's
    /// health already updated.
    private func runBatch(
        _ first: [WriteOperation], newcomer: Bool, core: GroupCommit<WriteOperation>, on connection: SQLiteConnection,
        logger: Logger, gate: inout HealthGate
    ) {
        stats.withLock { stats in
            stats.transactions += 1
            stats.operations += first.count
        }
        let changesBefore = connection.totalChanges
        var unavailable: StoreUnavailableError?
        // Once a newcomer's write (a tenant that had nothing queued, `FairBatches`) is in, the transaction takes only
        // newcomers' writes: that write waits for the slice in progress when it arrived and its own, not for the rest
        // of the budget spent on another tenant's backlog.
        var holdsNewcomer = newcomer
        let result = core.run(
            first, in: SQLiteGroupTransaction(connection: connection),
            more: { maxCount, maxCost in
                let more = queue.takeSlice(
                    waiting: false, newcomersOnly: holdsNewcomer, maxCount: min(maxCount, Self.sliceCount),
                    maxCost: min(maxCost, Self.sliceCost))
                holdsNewcomer = holdsNewcomer || more.newcomer
                stats.withLock { $0.operations += more.items.count }
                return more.items
            },
            write: { operation, _ in try operation.run(connection) },
            classify: { failure, _ in
                if let reason = StoreUnavailableError(sqlite: failure) { unavailable = unavailable ?? reason }
                // No write is run again: under the one writer no other transaction can have conflicted with it.
                return .failAfterCommit
            })
        switch result {
        case .failed(let batch, let error, _):
            if let reason = StoreUnavailableError(sqlite: error) ?? unavailable {
                // An outage is logged once per interval by whoever watches `health`, not once per batch.
                logger.debug(
                    "Group commit failed: store unavailable",
                    ["operations": String(batch.count), "error": reason.description])
                gate.report(.failed(reason))
            } else {
                logger.error(
                    "Group commit failed", ["operations": String(batch.count), "error": String(describing: error)])
            }
            // Nothing in this batch is durable (every operation taken, run or not), so every caller hears about it;
            // none is resumed twice, since no completion runs.
            for operation in batch { operation.fail(error) }
        case .committed(let batch, let completions, let failed, _):
            if let unavailable {
                gate.report(.failed(unavailable))
            } else if connection.totalChanges > changesBefore || batch.contains(where: \.isProbe) {
                gate.report(.wrote)
            }
            for completion in completions { completion() }
            for (operation, error) in failed { operation.fail(error) }
        }
    }
}

/// Reader threads, each with its own read-only connection, sharing one queue (WAL lets them read while the
/// writer writes).
final class ReaderPool: Sendable {
    private let queue = BlockingQueue<ReadOperation>()

    /// Starts `count` threads. `open` runs on each; `ready` is called once per thread. Each read passes `gate`
    /// (when given), which the writer closes for a moment to start the WAL over.
    init(
        count: Int,
        gate: WALRestartGate?,
        open: @escaping @Sendable () throws -> SQLiteConnection,
        ready: @escaping @Sendable (Result<Void, any Error>) -> Void,
        finished: @escaping @Sendable ((any Error)?) -> Void
    ) {
        for index in 0..<count {
            NamedThread.start("store-reader-\(index)", stackSize: 1 << 20) { [queue, gate] in
                let connection: SQLiteConnection
                do {
                    connection = try open()
                } catch {
                    ready(.failure(error))
                    finished(nil)
                    return
                }
                ready(.success(()))
                while true {
                    let batch = queue.take(max: 1)
                    guard let operation = batch.first else { break }
                    gate?.enterRead()
                    operation.run(connection)
                    gate?.leaveRead()
                }
                do {
                    try connection.close()
                    finished(nil)
                } catch {
                    finished(error)
                }
            }
        }
    }

    /// Queues an operation; `false` once the pool is shutting down.
    func submit(_ operation: ReadOperation) -> Bool { queue.push(operation) }

    /// Stops accepting work; queued reads still run.
    func shutdown() { queue.close() }
}
