import Foundation

/// A store's queue of work for its threads (SQLite's writer, PostgreSQL's connection threads): producers never block,
/// a thread blocks in `takeBatch` until work arrives or the queue is closed (no polling); the batch is chosen by
/// `FairBatches`, so one tenant's backlog does not hold up another's.
///
/// `@unchecked Sendable`: `batches` and `closed` are only touched while holding `condition` (an `NSCondition`, the
/// waiting form of the pthread lock `Locked` uses, as in `BlockingQueue`).
package final class FairQueue<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var batches: FairBatches<Item>
    private var closed = false
    /// The weight of tenant `""`: the stores' own work (the publish engine, housekeeping), which serves every
    /// instance, against one instance's.
    private let ownWeight: Int

    /// - Parameter ownWeight: the weight of tenant `""` (every other tenant weighs 1).
    package init(quantum: Int = 256, ownWeight: Int = 1) {
        batches = FairBatches(quantum: quantum)
        self.ownWeight = max(1, ownWeight)
    }

    /// Queues work for `tenant` (`cost` at least 1; tenant `""` weighs `ownWeight`; `continuing`: the next step of
    /// a larger write, never a newcomer's, `FairBatches.push`); `false` (and dropped) once the queue is closed.
    @discardableResult
    package func push(_ item: Item, tenant: String, cost: Int, continuing: Bool = false) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        batches.push(item, tenant: tenant, cost: cost, weight: tenant.isEmpty ? ownWeight : 1, continuing: continuing)
        condition.signal()
        return true
    }

    /// Queues a write that the next batch takes before every tenant's; `false` once the queue is closed.
    @discardableResult
    package func pushUrgent(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        batches.pushUrgent(item)
        condition.signal()
        return true
    }

    /// Blocks until a write is queued, then returns the next batch; empty only once closed and drained.
    package func takeBatch(maxCount: Int, maxCost: Int) -> [Item] {
        takeSlice(waiting: true, maxCount: maxCount, maxCost: maxCost).items
    }

    /// `takeBatch` (`waiting`), or without waiting (`[]` at once when nothing is queued: how a thread adds more to
    /// a transaction it has already opened), also saying whether the batch holds a write of a tenant that had
    /// nothing queued (`FairBatches.tookNewcomer`). SQLite's writer then adds only newcomers' writes
    /// (`newcomersOnly`) and commits, instead of filling the transaction to its budget from a backlog: a sparse
    /// tenant waits for one slice of a busy one, not for the rest of its transaction.
    package func takeSlice(waiting: Bool, newcomersOnly: Bool = false, maxCount: Int, maxCost: Int)
        -> (items: [Item], newcomer: Bool)
    {
        condition.lock()
        defer { condition.unlock() }
        if waiting {
            while batches.count == 0 && !closed { condition.wait() }
        }
        guard batches.count > 0 else { return ([], false) }
        let items = batches.takeBatch(maxCount: maxCount, maxCost: maxCost, newcomersOnly: newcomersOnly)
        return (items, batches.tookNewcomer)
    }

    /// Writes queued and not yet taken.
    package var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return batches.count
    }

    /// Refuses new writes and wakes the writer; queued writes are still handed out.
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
