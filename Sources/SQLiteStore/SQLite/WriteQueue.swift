import Foundation

/// The writer thread's queue: producers never block, the writer blocks in `takeBatch` until writes arrive or the
/// queue is closed (no polling); the batch is chosen by `FairBatches`.
///
/// `@unchecked Sendable`: `batches` and `closed` are only touched while holding `condition` (an `NSCondition`, the
/// waiting form of the pthread lock `Locked` uses, as in `BlockingQueue`).
final class WriteQueue<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var batches: FairBatches<Item>
    private var closed = false

    init(quantum: Int = 256) {
        batches = FairBatches(quantum: quantum)
    }

    /// Queues a write for `tenant`; `false` (and dropped) once the queue is closed.
    func push(_ item: Item, tenant: String, cost: Int, weight: Int = 1) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        batches.push(item, tenant: tenant, cost: cost, weight: weight)
        condition.signal()
        return true
    }

    /// Queues a write that the next batch takes before every tenant's; `false` once the queue is closed.
    func pushUrgent(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        batches.pushUrgent(item)
        condition.signal()
        return true
    }

    /// Blocks until a write is queued, then returns the next batch; empty only once closed and drained.
    func takeBatch(maxCount: Int, maxCost: Int) -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        while batches.count == 0 && !closed { condition.wait() }
        return batches.takeBatch(maxCount: maxCount, maxCost: maxCost)
    }

    /// Writes queued and not yet taken.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return batches.count
    }

    /// Refuses new writes and wakes the writer; queued writes are still handed out.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
