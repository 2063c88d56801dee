import Locking

/// A bounded share of a sender's window per key (a destination): at most `limit` slots per key, so one slow
/// destination (a push service that drops connection attempts) cannot take every slot of the window and hold up
/// messages to the others. `acquire` suspends while the key's share is full and is woken, in order, by `release`
/// of the same key; `close` wakes every waiter with false. `KeyedShareBook` holds the state.
public final class KeyedShares: Sendable {
    private struct State {
        var book: KeyedShareBook<CheckedContinuation<Bool, Never>>
        var closed = false
    }

    public let limit: Int
    private let state: Locked<State>

    public init(limit: Int) {
        self.limit = max(1, limit)
        state = Locked(State(book: KeyedShareBook(limit: limit)))
    }

    /// Takes a slot of `key`, suspending while the key holds `limit`. Returns false (nothing taken) once closed.
    public func acquire(_ key: String) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { state -> Bool? in
                if state.closed { return false }
                return state.book.acquire(key, waiter: continuation) ? true : nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Frees a slot of `key`: its longest waiter takes it over.
    public func release(_ key: String) {
        let waiter = state.withLock { $0.book.release(key) }
        waiter?.resume(returning: true)
    }

    /// Refuses new slots and wakes every waiter with false.
    public func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.closed = true
            return state.book.removeAllWaiters()
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }

    /// `acquire` calls suspended, every key together.
    public var waiting: Int { state.withLock { $0.book.waitingAll } }

    /// Slots `key` holds now.
    public func held(_ key: String) -> Int { state.withLock { $0.book.held(key) } }
}
