import Foundation

/// Counts arrivals down to zero and then wakes every waiter with the errors that arrived: the start-up and shutdown
/// of the stores' dedicated threads (SQLite's writer and readers, PostgreSQL's connection threads).
public final class CountdownLatch: Sendable {
    private struct State {
        var remaining: Int
        var errors: [any Error] = []
        var waiters: [CheckedContinuation<[any Error], Never>] = []
    }

    private let state: Locked<State>

    public init(count: Int) { state = Locked(State(remaining: count)) }

    /// One participant is done, successfully (`nil`) or not.
    public func arrive(_ error: (any Error)?) {
        let (resume, result) = state.withLock { state in
            if let error { state.errors.append(error) }
            state.remaining -= 1
            guard state.remaining == 0 else { return ([CheckedContinuation<[any Error], Never>](), state.errors) }
            defer { state.waiters.removeAll() }
            return (state.waiters, state.errors)
        }
        for waiter in resume { waiter.resume(returning: result) }
    }

    /// Waits until every participant arrived. - Returns: their errors.
    public func wait() async -> [any Error] {
        await withCheckedContinuation { continuation in
            let done: [any Error]? = state.withLock { state in
                if state.remaining <= 0 { return state.errors }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}
