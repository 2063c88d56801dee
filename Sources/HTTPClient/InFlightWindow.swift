import Locking

/// Backpressure for a sender: at most `capacity` requests hold a slot from acceptance until their final result
/// (retries and their delays included). An `AdmissionWindow` with a count of slots: `acquire` suspends while the
/// window is full and is woken, in order, by `release`; no polling. A waiter leaves when its task or its run is
/// cancelled. `close` refuses new slots and wakes every waiter with `false`.
package final class InFlightWindow: Sendable {
    /// The count of slots in use, and who to call once none is.
    struct Slots: AdmissionPolicy {
        let capacity: Int
        var inUse = 0
        var drainWaiters: [@Sendable () -> Void] = []

        mutating func admit() -> Void? {
            guard inUse < capacity else { return nil }
            inUse += 1
            return ()
        }
    }

    package let capacity: Int
    private let window: AdmissionWindow<Slots, Void>

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        window = AdmissionWindow(Slots(capacity: self.capacity))
    }

    /// Takes a slot, suspending while none is free. Returns false (no slot taken) once the window is closed, or
    /// when the calling task or `scope` (the run the request belongs to) is cancelled while it waits: a cancelled
    /// publish does not wait for another publish's requests to free a slot it will not use.
    package func acquire(cancelledBy scope: RetryScope? = nil) async -> Bool {
        if case .admitted = await window.acquire((), cancelledBy: scope) { return true }
        return false
    }

    /// Frees a slot: the longest waiter takes it over; with none, and none in use, the drain callbacks run.
    package func release() {
        let (waiter, drained) = window.withState {
            state -> (AdmissionWindow<Slots, Void>.Waiter?, [@Sendable () -> Void]) in
            if !state.isClosed, let waiter = state.popWaiter() { return (waiter, []) }  // the slot passes on
            state.policy.inUse = max(0, state.policy.inUse - 1)
            guard state.policy.inUse == 0 else { return (nil, []) }
            defer { state.policy.drainWaiters = [] }
            return (nil, state.policy.drainWaiters)
        }
        waiter?.admit(())
        for body in drained { body() }
    }

    /// Refuses new slots from now on and wakes every waiting `acquire` with false.
    package func close() {
        window.close()
    }

    /// Calls `body` once no slot is in use: at once if none is, else from the thread that frees the last one.
    package func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = window.withState { state -> Bool in
            if state.policy.inUse == 0 { return true }
            state.policy.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    /// Slots in use.
    package var inUse: Int { window.withState { $0.policy.inUse } }
    /// `acquire` calls suspended for a slot.
    package var waiting: Int { window.withState { $0.waiting } }
}

extension InFlightWindow {
    /// Returns once no slot is in use (woken by the last `release`) or `gracePeriod` has passed (a real deadline),
    /// whichever comes first; a cancelled caller still grants the grace period.
    package func waitUntilDrained(gracePeriod: Duration) async {
        let drained = WaitableState(false)
        whenDrained { drained.update { $0 = true } }
        let grace = min(max(.zero, gracePeriod), .seconds(86_400))
        await drained.wait(until: { $0 }, timeout: grace, cancellable: false)
    }
}
