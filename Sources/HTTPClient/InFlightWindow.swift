import Clocks
import Locking

/// Backpressure for a sender: at most `capacity` requests hold a slot from acceptance until their final result
/// (retries and their delays included). An `AdmissionWindow` with a count of slots: `acquire` suspends while the
/// window is full and is woken, in order, by `release`; no polling. A waiter leaves when its task or its run is
/// cancelled. `close` refuses new slots and wakes every waiter with `false`.
///
/// Waiters are admitted in batches, as `APNsPool` admits its own: once `resumeBatch` slots are free, not one per
/// freed slot. A publish's fan-out is one task submitting in a loop, so it then suspends (and is resumed on a pool
/// thread) once per batch instead of once per request; each resumption is a cross-thread wake-up of several µs, and
/// the requests of a batch reach the curl loops together (docs/BENCHMARKS.md, "FCM: one resumption per batch").
/// Slots held by requests that wait a long retry delay must not keep a waiter out while fewer than a batch are
/// free: a slot freed below the batch schedules one admission of whoever waits `flushDelay` later.
package final class InFlightWindow: Sendable {
    /// The count of slots in use, and who to call once none is. Pure: `release` and the flush timer carry out what
    /// `released` and `flushed` decide.
    struct Slots: AdmissionPolicy {
        /// What freeing a slot asks of the window.
        enum AfterRelease: Equatable {
            /// Nothing: nobody waits, or a flush is due already.
            case none
            /// Admit this many of the longest waiters now (their slots are counted in `inUse` already).
            case admit(Int)
            /// Fewer than a batch of slots is free: admit whoever waits after `flushDelay` (`flushed`).
            case admitLater
        }

        let capacity: Int
        /// Free slots that admit the waiters together.
        let resumeBatch: Int
        var inUse = 0
        /// A flush is scheduled and has not run yet.
        var flushDue = false
        var drainWaiters: [@Sendable () -> Void] = []

        init(capacity: Int) {
            self.capacity = max(1, capacity)
            resumeBatch = InFlightWindow.resumeBatch(capacity: self.capacity)
        }

        mutating func admit() -> Void? {
            guard inUse < capacity else { return nil }
            inUse += 1
            return ()
        }

        /// A slot was freed while `waiting` callers wait in line (0 once the window is closed).
        mutating func released(waiting: Int) -> AfterRelease {
            inUse = max(0, inUse - 1)
            guard waiting > 0 else { return .none }
            let free = capacity - inUse
            if free >= resumeBatch {
                let admitted = min(waiting, free)
                inUse += admitted
                return .admit(admitted)
            }
            if flushDue { return .none }
            flushDue = true
            return .admitLater
        }

        /// The scheduled flush: how many of `waiting` callers take the slots free now, whatever their number.
        mutating func flushed(waiting: Int) -> Int {
            flushDue = false
            let admitted = min(waiting, capacity - inUse)
            inUse += admitted
            return admitted
        }
    }

    /// How long a waiter may wait for a batch of free slots while fewer are free: about a batch's worth of answers
    /// at a few thousand per second, far below a retry delay.
    static let flushDelay: Duration = .milliseconds(5)

    /// Free slots that admit waiters together for a window of `capacity`: a sixteenth of it, 1 to 32 (small windows,
    /// as in tests and throttled setups, admit one waiter per freed slot, as before batches).
    package static func resumeBatch(capacity: Int) -> Int {
        max(1, min(32, capacity / 16))
    }

    /// Runs a flush (the closure) once the delay has passed: how `release` asks for the late admission.
    package typealias FlushScheduler = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    /// The scheduler outside tests: a real timer (`MonotonicTimer`).
    package static let timerFlush: FlushScheduler = { delay, body in _ = MonotonicTimer.schedule(after: delay, body) }

    package let capacity: Int
    private let window: AdmissionWindow<Slots, Void>
    private let scheduleFlush: FlushScheduler

    /// A window of `capacity` slots. `scheduleFlush` runs the late admission `release` asks for after the delay it
    /// is given; tests pass their own to order the flush against `close` instead of racing a 5 ms timer.
    package init(capacity: Int, scheduleFlush: @escaping FlushScheduler = InFlightWindow.timerFlush) {
        self.capacity = max(1, capacity)
        window = AdmissionWindow(Slots(capacity: self.capacity))
        self.scheduleFlush = scheduleFlush
    }

    /// Takes a slot, suspending while none is free. Returns false (no slot taken) once the window is closed, or
    /// when the calling task or `scope` (the run the request belongs to) is cancelled while it waits: a cancelled
    /// publish does not wait for another publish's requests to free a slot it will not use.
    package func acquire(cancelledBy scope: RetryScope? = nil) async -> Bool {
        if case .admitted = await window.acquire((), cancelledBy: scope) { return true }
        return false
    }

    /// Frees a slot: once a batch of slots is free the longest waiters take them over (see the type's notes); with
    /// none waiting, and none in use, the drain callbacks run.
    package func release() {
        let (admitted, drained, later) = window.withState {
            state -> ([AdmissionWindow<Slots, Void>.Waiter], [@Sendable () -> Void], Bool) in
            switch state.policy.released(waiting: state.isClosed ? 0 : state.waiting) {
            case .admit(let count):
                return (Self.pop(count, from: &state), [], false)
            case .admitLater:
                return ([], [], true)
            case .none:
                guard state.policy.inUse == 0 else { return ([], [], false) }
                defer { state.policy.drainWaiters = [] }
                return ([], state.policy.drainWaiters, false)
            }
        }
        for waiter in admitted { waiter.admit(()) }
        for body in drained { body() }
        if later { scheduleFlush(Self.flushDelay) { [self] in flush() } }
    }

    /// Admits whoever waits into the slots free now (the timer `release` scheduled).
    private func flush() {
        let admitted = window.withState { state -> [AdmissionWindow<Slots, Void>.Waiter] in
            let count = state.policy.flushed(waiting: state.isClosed ? 0 : state.waiting)
            return Self.pop(count, from: &state)
        }
        for waiter in admitted { waiter.admit(()) }
    }

    /// The `count` longest waiters, whose slots the policy counted already.
    private static func pop(_ count: Int, from state: inout AdmissionWindow<Slots, Void>.State)
        -> [AdmissionWindow<Slots, Void>.Waiter]
    {
        var waiters: [AdmissionWindow<Slots, Void>.Waiter] = []
        waiters.reserveCapacity(count)
        while waiters.count < count, let waiter = state.popWaiter() { waiters.append(waiter) }
        return waiters
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
