import Foundation

/// A blocking multi-producer queue drained by the store's own threads.
///
/// `@unchecked Sendable`: `items`, `head` and `closed` are only touched while holding `condition`.
final class WorkQueue<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Item] = []
    private var head = 0
    private var closed = false

    /// Adds an item; returns `false` (and drops it) once the queue is closed.
    func push(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        items.append(item)
        condition.signal()
        return true
    }

    /// Blocks until at least one item is available and takes up to `max` of them in FIFO order.
    /// Returns an empty array only when the queue is closed and drained.
    func take(max: Int) -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        while head == items.count && !closed { condition.wait() }
        let end = min(items.count, head + max)
        let batch = Array(items[head..<end])
        head = end
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 4096)
            head = 0
        } else if head > 4096 {
            items.removeFirst(head)
            head = 0
        }
        return batch
    }

    /// Items pushed and not yet taken.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count - head
    }

    /// Refuses new items and wakes every waiting thread; items already queued are still handed out.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
