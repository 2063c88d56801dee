/// Something besides the waiting task whose cancellation ends a wait: the publish run a request belongs to
/// (`RetryScope`), so that a cancelled publish leaves every line it waits in at once.
public protocol CancellationSource: Sendable {
    /// Registers `onCancel`, run once (on the cancelling thread) if the source is cancelled before `unregister`.
    /// - Returns: the registration, or nil when the source is cancelled already (nothing registered).
    func register(onCancel: @escaping @Sendable () -> Void) -> Int?
    /// The wait is over: `onCancel` will not run (unless it is running already).
    func unregister(_ registration: Int)
}

/// How an admission window hands out slots: the part that differs between windows (a count of slots, slots per
/// connection), kept under the window's lock.
public protocol AdmissionPolicy: SendableMetatype {
    /// What an admitted caller gets (nothing, or the connection its slot is on).
    associatedtype Grant: Sendable
    /// Takes a slot for a caller now, or nil when none is free. Called only while nobody waits, so a newcomer
    /// never overtakes the line.
    mutating func admit() -> Grant?
}

/// The one admission window of the project (a sender's in-flight window, an APNs pool): `acquire` takes a slot the
/// policy has free or waits in line, first in first out, without polling; whoever frees slots admits the longest
/// waiters (`withState`, `State.popWaiter`). A waiter leaves the line at once, answered `.cancelled`, when its task
/// or its `CancellationSource` is cancelled, also before it queued (`WaiterQueue` keeps the ticket for that):
/// a cancelled publish does not wait for slots that other publishes' requests hold. `close` refuses newcomers.
///
/// `acquire`, `withState` and what they use are `@inlinable` and `public` (scripts/public-api.txt), as
/// `WaitableState` is: a generic class's body called from another module runs unspecialised and looks its types up
/// at run time (Swift's generic metadata cache) on every call. An APNs pool acquires once per notification and frees
/// under `withState` once per answer; unspecialised, that was about 7,000 instructions per notification of metadata
/// look-ups (callgrind, docs/BENCHMARKS.md, issue 27). Swift 6.3 specialises no `package` function across modules.
public final class AdmissionWindow<Policy: AdmissionPolicy, Payload: Sendable>: Sendable {
    /// How `acquire` ended.
    public enum Admission: Sendable {
        /// A slot was taken: the policy's grant, or the grant of whoever admitted the waiter.
        case admitted(Policy.Grant)
        /// The window is closed (before or while the caller waited).
        case closed
        /// The caller's task or cancellation source was cancelled while it waited; no slot was taken.
        case cancelled
    }

    /// A caller waiting in line, with what it brought (`payload`: the job an admitter may start on its behalf).
    public struct Waiter: Sendable {
        public let payload: Payload
        @usableFromInline let continuation: CheckedContinuation<Admission, Never>

        @usableFromInline
        init(payload: Payload, continuation: CheckedContinuation<Admission, Never>) {
            self.payload = payload
            self.continuation = continuation
        }

        /// Ends the wait with `grant`. Call outside `withState`.
        @inlinable
        public func admit(_ grant: Policy.Grant) { continuation.resume(returning: .admitted(grant)) }
        /// Ends the wait as refused (the window closed). Call outside `withState`.
        @inlinable
        public func refuse() { continuation.resume(returning: .closed) }
    }

    /// The policy, the line and whether the window is closed, as `withState` lends them.
    public struct State {
        public var policy: Policy
        @usableFromInline var line = WaiterQueue<Waiter>()
        @usableFromInline var closed = false

        init(policy: Policy) {
            self.policy = policy
        }

        /// The window refuses newcomers.
        @inlinable
        public var isClosed: Bool { closed }
        /// Callers waiting now.
        @inlinable
        public var waiting: Int { line.count }
        /// The longest waiter, which leaves the line (admit or refuse it once the lock is released).
        @inlinable
        public mutating func popWaiter() -> Waiter? { line.popFirst() }
        /// Closes the window. - Returns: every waiter, longest first, to refuse once the lock is released.
        package mutating func close() -> [Waiter] {
            closed = true
            return line.removeAll()
        }
    }

    @usableFromInline let state: Locked<State>

    package init(_ policy: Policy) {
        state = Locked(State(policy: policy))
    }

    /// Runs `body` under the window's lock: free slots, admit waiters (resume them after it returns), read gauges.
    @inlinable
    public func withState<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock(body)
    }

    /// Takes a slot, waiting in line while the policy has none free.
    /// - Parameters:
    ///   - payload: kept with the waiter, for whoever admits it.
    ///   - source: ends the wait when cancelled, as the task's own cancellation does.
    @inlinable
    public func acquire(_ payload: Payload, cancelledBy source: (any CancellationSource)? = nil) async -> Admission {
        // At once, or a ticket in line (taken before the continuation exists, so a cancellation can find it).
        let first = state.withLock { state -> (answer: Admission?, ticket: WaiterQueue<Waiter>.Ticket) in
            if state.closed { return (.closed, 0) }
            if state.line.isEmpty, let grant = state.policy.admit() { return (.admitted(grant), 0) }
            return (nil, state.line.reserve())
        }
        if let answer = first.answer { return answer }
        let ticket = first.ticket
        let registration = source?.register(onCancel: { [self] in self.leave(ticket) })
        if source != nil && registration == nil {
            state.withLock { $0.line.settle(ticket) }
            return .cancelled
        }
        defer { if let source, let registration { source.unregister(registration) } }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Admission, Never>) in
                // Look again: slots may have freed, the window closed or the wait been cancelled since the first look.
                let now = state.withLock { state -> Admission? in
                    if state.line.isCancelledEarly(ticket) {
                        state.line.settle(ticket)
                        return .cancelled
                    }
                    if state.closed {
                        state.line.settle(ticket)
                        return .closed
                    }
                    if state.line.isEmpty, let grant = state.policy.admit() {
                        state.line.settle(ticket)
                        return .admitted(grant)
                    }
                    let queued = state.line.enqueue(
                        Waiter(payload: payload, continuation: continuation), ticket: ticket)
                    return queued ? nil : .cancelled
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            self.leave(ticket)
        }
    }

    /// The waiter with `ticket` leaves the line (its task or source was cancelled): answered `.cancelled` if it
    /// was queued, else marked so that it does not queue.
    @usableFromInline
    func leave(_ ticket: WaiterQueue<Waiter>.Ticket) {
        state.withLock { $0.line.cancel(ticket) }?.continuation.resume(returning: .cancelled)
    }

    /// Closes the window and refuses every waiter (`.closed`). - Returns: their payloads, longest waiter first.
    @discardableResult
    package func close() -> [Payload] {
        let waiters = state.withLock { $0.close() }
        for waiter in waiters { waiter.refuse() }
        return waiters.map(\.payload)
    }
}
