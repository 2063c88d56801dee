import Foundation

/// A blocking multi-producer queue drained by dedicated threads (the store's SQLite threads, the log writer).
///
/// Producers never block: `push` appends and signals. Consumers block in `take` until items arrive or the queue
/// is closed, so a drained queue costs no CPU (no polling).
///
/// It waits on an `NSCondition` (a pthread mutex plus condition variable), the waiting form of the same pthread
/// lock `Locked` uses; ThreadSanitizer models both.
///
/// `@unchecked Sendable`: `items` and `closed` are only touched while holding `condition`.
package final class BlockingQueue<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items = FIFO<Item>(compactAfter: 4096)
    private var closed = false
    /// Most items held at once; `push` refuses more, so a consumer that falls behind cannot grow memory forever.
    private let capacity: Int

    /// - Parameter capacity: items held at most before `push` refuses (`Int.max`: unbounded, for producers that
    ///   are bounded elsewhere, like the store's callers).
    package init(capacity: Int = .max) {
        self.capacity = max(1, capacity)
    }

    /// Adds an item; returns `false` (and drops it) once the queue is closed or holds `capacity` items.
    /// - Parameter evenIfFull: adds the item past the capacity (control items such as flush markers).
    @discardableResult
    package func push(_ item: Item, evenIfFull: Bool = false) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed, evenIfFull || items.count < capacity else { return false }
        items.append(item)
        condition.signal()
        return true
    }

    /// Adds an item ahead of every queued one, so the next `take` hands it out first; returns `false` (and drops
    /// it) once the queue is closed. For the few items that must not wait behind a backlog (the SQLite writer's
    /// lease renewals); past the capacity, like a control item.
    @discardableResult
    package func pushFirst(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        items.prepend(item)
        condition.signal()
        return true
    }

    /// Blocks until at least one item is available and takes up to `max` of them in FIFO order.
    /// Returns an empty array only when the queue is closed and drained.
    package func take(max: Int) -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed { condition.wait() }
        return items.popFirst(max: max)
    }

    /// Items pushed and not yet taken.
    package var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count
    }

    /// Refuses new items and wakes every waiting thread; items already queued are still handed out.
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
