import Dispatch
import Locking

/// Backpressure for a sender: at most `capacity` requests hold a slot from acceptance until their final result
/// (retries and their delays included). `acquire` suspends while the window is full and is woken, in order, by
/// `release`; no polling. `close` refuses new slots and wakes every waiter with `false`.
public final class InFlightWindow: Sendable {
    private struct State {
        var inUse = 0
        var waiters: [CheckedContinuation<Bool, Never>] = []
        var head = 0
        var closed = false
        var drainWaiters: [@Sendable () -> Void] = []

        var waiting: Int { waiters.count - head }

        mutating func popWaiter() -> CheckedContinuation<Bool, Never>? {
            guard head < waiters.count else { return nil }
            let waiter = waiters[head]
            head += 1
            if head == waiters.count {
                waiters.removeAll(keepingCapacity: true)
                head = 0
            }
            return waiter
        }
    }

    public let capacity: Int
    private let state = Locked(State())

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Takes a slot, suspending while none is free. Returns false (no slot taken) once the window is closed.
    public func acquire() async -> Bool {
        let now = state.withLock { state -> Bool? in
            if state.closed { return false }
            if state.inUse < capacity && state.waiting == 0 {
                state.inUse += 1
                return true
            }
            return nil
        }
        if let now { return now }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            // Re-check: a slot may have been freed, or the window closed, since the first look.
            let answer = state.withLock { state -> Bool? in
                if state.closed { return false }
                if state.inUse < capacity && state.waiting == 0 {
                    state.inUse += 1
                    return true
                }
                state.waiters.append(continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Frees a slot: the longest waiter takes it over; with none, and none in use, the drain callbacks run.
    public func release() {
        let (waiter, drained) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, [@Sendable () -> Void]) in
            if !state.closed, let waiter = state.popWaiter() { return (waiter, []) }  // the slot passes on
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
            var taken: [CheckedContinuation<Bool, Never>] = []
            while let waiter = state.popWaiter() { taken.append(waiter) }
            return taken
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
    public var waiting: Int { state.withLock { $0.waiting } }
}

extension InFlightWindow {
    /// Returns once no slot is in use (woken by the last `release`) or `gracePeriod` seconds have passed (a timer:
    /// a real deadline), whichever comes first.
    public func waitUntilDrained(gracePeriod: Double) async {
        let once = Locked<CheckedContinuation<Void, Never>?>(nil)
        let resume: @Sendable () -> Void = {
            let continuation = once.withLock { value -> CheckedContinuation<Void, Never>? in
                defer { value = nil }
                return value
            }
            continuation?.resume()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            once.withLock { $0 = continuation }
            let grace = gracePeriod.isFinite ? min(max(0, gracePeriod), 86_400) : 0
            DispatchQueue.global().asyncAfter(deadline: .now() + grace, execute: resume)
            whenDrained(resume)
        }
    }
}
