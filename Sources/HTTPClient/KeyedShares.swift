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

    /// Takes a slot of `key`, suspending while the key holds `limit`. Returns false (nothing taken) once closed,
    /// or when the calling task or `scope` (the request's run) is cancelled while it waits.
    public func acquire(_ key: String, cancelledBy scope: RetryScope? = nil) async -> Bool {
        let ticket = state.withLock { $0.book.reserve(key) }
        let leave: @Sendable () -> Void = { [state] in
            state.withLock { $0.book.cancel(key, ticket: ticket) }?.resume(returning: false)
        }
        let scopeTicket = scope?.wait(onCancel: leave)
        if scope != nil && scopeTicket == nil {
            state.withLock { $0.book.forget(key, ticket: ticket) }
            return false
        }
        defer { if let scope, let scopeTicket { _ = scope.resume(scopeTicket) } }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.closed {
                        state.book.forget(key, ticket: ticket)
                        return false
                    }
                    switch state.book.acquire(key, ticket: ticket, waiter: continuation) {
                    case .taken: return true
                    case .cancelled: return false
                    case .queued: return nil
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            leave()
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
