import Locking

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
    /// Identifies one waiter, across every key.
    public typealias Ticket = WaiterQueue<Waiter>.Ticket

    /// What `acquire` did.
    public enum Acquisition: Equatable {
        /// A slot, at once.
        case taken
        /// Queued: a later `release` of the key hands it the slot, or `cancel` takes it out.
        case queued
        /// Cancelled before it could queue: no slot, nothing queued.
        case cancelled
    }

    /// Slots one key may hold at a time.
    public let limit: Int
    private var held: [String: Int] = [:]
    private var queues: [String: WaiterQueue<Waiter>] = [:]
    private var lastTicket: Ticket = 0

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A ticket for a waiter about to ask for a slot of `key` (see `WaiterQueue`: a cancellation can come before
    /// the waiter exists).
    public mutating func reserve(_ key: String) -> Ticket {
        lastTicket &+= 1
        queues[key, default: WaiterQueue()].reserve(lastTicket)
        return lastTicket
    }

    /// Takes a slot of `key` for `waiter`, which reserved `ticket`.
    public mutating func acquire(_ key: String, ticket: Ticket, waiter: Waiter) -> Acquisition {
        var queue = queues[key] ?? WaiterQueue()
        defer { queues[key] = queue.isIdle ? nil : queue }
        if queue.isCancelledEarly(ticket) {
            queue.settle(ticket)
            return .cancelled
        }
        if held[key, default: 0] < limit && queue.isEmpty {
            queue.settle(ticket)
            held[key, default: 0] += 1
            return .taken
        }
        return queue.enqueue(waiter, ticket: ticket) ? .queued : .cancelled
    }

    /// Takes a slot of `key` for `waiter`. - Returns: true when taken at once; false when `waiter` was queued (a
    /// later `release` of the key hands it the slot).
    public mutating func acquire(_ key: String, waiter: Waiter) -> Bool {
        acquire(key, ticket: reserve(key), waiter: waiter) == .taken
    }

    /// Drops `ticket`'s reservation without a slot (the window closed, or its run was cancelled already).
    public mutating func forget(_ key: String, ticket: Ticket) {
        guard var queue = queues[key] else { return }
        queue.settle(ticket)
        queues[key] = queue.isIdle ? nil : queue
    }

    /// The waiter with `ticket` leaves `key`'s line. - Returns: it, when it was queued (answer it as cancelled).
    public mutating func cancel(_ key: String, ticket: Ticket) -> Waiter? {
        guard var queue = queues[key] else { return nil }
        let waiter = queue.cancel(ticket)
        queues[key] = queue.isIdle ? nil : queue
        return waiter
    }

    /// Frees a slot of `key`. - Returns: the longest waiter for the key, which now holds the slot; nil when none
    /// waited (the slot is free; a key holding nothing is forgotten, so the book grows only with busy keys).
    public mutating func release(_ key: String) -> Waiter? {
        if var queue = queues[key], let waiter = queue.popFirst() {
            queues[key] = queue.isIdle ? nil : queue
            return waiter
        }
        let left = held[key, default: 0] - 1
        held[key] = left > 0 ? left : nil
        return nil
    }

    /// Takes every waiter out (shutdown), in no particular order; held slots stay counted until released.
    public mutating func removeAllWaiters() -> [Waiter] {
        var all: [Waiter] = []
        for key in Array(queues.keys) {
            all += queues[key]!.removeAll()
            queues[key] = queues[key]!.isIdle ? nil : queues[key]
        }
        return all
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
