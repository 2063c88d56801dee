/// The bookkeeping behind `KeyedShares`: how many slots each key (a destination) holds, at most `limit`, and who
/// waits for one, first come first served per key. No locks and no continuations, so it is tested on its own.
///
/// ```swift
/// var book = KeyedShareBook<Int>(limit: 2)
/// book.acquire("a", waiter: 1)   // true: a slot at once
/// book.acquire("a", waiter: 2)   // true
/// book.acquire("a", waiter: 3)   // false: 3 waits
/// book.acquire("b", waiter: 4)   // true: another key is not held up by "a"
/// book.release("a")              // 3: the slot passes on to it
/// ```
public struct KeyedShareBook<Waiter> {
    private struct Queue {
        var items: [Waiter] = []
        var head = 0
        var count: Int { items.count - head }
    }

    /// Slots one key may hold at a time.
    public let limit: Int
    private var held: [String: Int] = [:]
    private var queues: [String: Queue] = [:]

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot of `key` for `waiter`. - Returns: true when taken at once; false when `waiter` was queued (a
    /// later `release` of the key hands it the slot).
    public mutating func acquire(_ key: String, waiter: Waiter) -> Bool {
        if held[key, default: 0] < limit && (queues[key]?.count ?? 0) == 0 {
            held[key, default: 0] += 1
            return true
        }
        queues[key, default: Queue()].items.append(waiter)
        return false
    }

    /// Frees a slot of `key`. - Returns: the longest waiter for the key, which now holds the slot; nil when none
    /// waited (the slot is free; a key holding nothing is forgotten, so the book grows only with busy keys).
    public mutating func release(_ key: String) -> Waiter? {
        if var queue = queues[key], queue.count > 0 {
            let waiter = queue.items[queue.head]
            queue.head += 1
            queues[key] = queue.count == 0 ? nil : queue
            return waiter
        }
        let left = held[key, default: 0] - 1
        held[key] = left > 0 ? left : nil
        return nil
    }

    /// Takes every waiter out (shutdown), in no particular order; held slots stay counted until released.
    public mutating func removeAllWaiters() -> [Waiter] {
        defer { queues = [:] }
        return queues.values.flatMap { $0.items[$0.head...] }
    }

    /// Slots `key` holds.
    public func held(_ key: String) -> Int { held[key, default: 0] }
    /// Waiters queued for `key`.
    public func waiting(_ key: String) -> Int { queues[key]?.count ?? 0 }
    /// Waiters queued, every key together.
    public var waitingAll: Int { queues.values.reduce(0) { $0 + $1.count } }
    /// Keys holding a slot or waited for.
    public var busyKeys: Int { Set(held.keys).union(queues.keys).count }
}
