import Locking

/// Backpressure for a sender: at most `capacity` requests hold a slot from acceptance until their final result
/// (retries and their delays included). `acquire` suspends while the window is full and is woken, in order, by
/// `release`; no polling. A waiter leaves when its task or its run is cancelled. `close` refuses new slots and
/// wakes every waiter with `false`.
public final class InFlightWindow: Sendable {
    private struct State {
        var inUse = 0
        var waiters = WaiterQueue<CheckedContinuation<Bool, Never>>()
        var closed = false
        var drainWaiters: [@Sendable () -> Void] = []
    }

    public let capacity: Int
    private let state = Locked(State())

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Takes a slot, suspending while none is free. Returns false (no slot taken) once the window is closed, or
    /// when the calling task or `scope` (the run the request belongs to) is cancelled while it waits: a cancelled
    /// publish does not wait for another publish's requests to free a slot it will not use.
    public func acquire(cancelledBy scope: RetryScope? = nil) async -> Bool {
        enum FirstLook { case closed, admitted, wait(WaiterQueue<CheckedContinuation<Bool, Never>>.Ticket) }
        let first = state.withLock { state -> FirstLook in
            if state.closed { return .closed }
            if state.inUse < capacity && state.waiters.isEmpty {
                state.inUse += 1
                return .admitted
            }
            return .wait(state.waiters.reserve())
        }
        let ticket: WaiterQueue<CheckedContinuation<Bool, Never>>.Ticket
        switch first {
        case .closed: return false
        case .admitted: return true
        case .wait(let reserved): ticket = reserved
        }
        let leave: @Sendable () -> Void = { [state] in
            state.withLock { $0.waiters.cancel(ticket) }?.resume(returning: false)
        }
        let scopeTicket = scope?.wait(onCancel: leave)
        if scope != nil && scopeTicket == nil {
            state.withLock { $0.waiters.settle(ticket) }
            return false
        }
        defer { if let scope, let scopeTicket { _ = scope.resume(scopeTicket) } }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // Re-check: a slot may have been freed, the window closed or the wait cancelled since the first look.
                let answer = state.withLock { state -> Bool? in
                    if state.closed || state.waiters.isCancelledEarly(ticket) {
                        state.waiters.settle(ticket)
                        return false
                    }
                    if state.inUse < capacity && state.waiters.isEmpty {
                        state.waiters.settle(ticket)
                        state.inUse += 1
                        return true
                    }
                    return state.waiters.enqueue(continuation, ticket: ticket) ? nil : false
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            leave()
        }
    }

    /// Frees a slot: the longest waiter takes it over; with none, and none in use, the drain callbacks run.
    public func release() {
        let (waiter, drained) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, [@Sendable () -> Void]) in
            if !state.closed, let waiter = state.waiters.popFirst() { return (waiter, []) }  // the slot passes on
            state.inUse = max(0, state.inUse - 1)
            guard state.inUse == 0 else { return (nil, []) }
            defer { state.drainWaiters = [] }
            return (nil, state.drainWaiters)
        }
        waiter?.resume(returning: true)
        for body in drained { body() }
    }

    /// Refuses new slots from now on and wakes every waiting `acquire` with false.
    public func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.closed = true
            return state.waiters.removeAll()
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }

    /// Calls `body` once no slot is in use: at once if none is, else from the thread that frees the last one.
    public func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.inUse == 0 { return true }
            state.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    /// Slots in use.
    public var inUse: Int { state.withLock { $0.inUse } }
    /// `acquire` calls suspended for a slot.
    public var waiting: Int { state.withLock { $0.waiters.count } }
}

extension InFlightWindow {
    /// Returns once no slot is in use (woken by the last `release`) or `gracePeriod` has passed (a real deadline),
    /// whichever comes first; a cancelled caller still grants the grace period.
    public func waitUntilDrained(gracePeriod: Duration) async {
        let drained = WaitableState(false)
        whenDrained { drained.update { $0 = true } }
        let grace = min(max(.zero, gracePeriod), .seconds(86_400))
        await drained.wait(until: { $0 }, timeout: grace, cancellable: false)
    }
}
