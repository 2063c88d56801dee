import Clocks

/// A value behind a lock that tasks can wait on: `wait(until:)` suspends until a condition over the value holds, and
/// every `update` resumes the waiters whose condition it made true. The one waitable primitive of the project: the
/// engine's loops wake on the event they wait for ("every answer is in", "a checkpoint made room", "the run was
/// stopped") instead of polling for it, `CountdownLatch` counts threads down on it, and a callback is bridged to
/// `async` by waiting for an optional to be set (the APNs client's `send`).
///
/// No lost wake-up: a waiter checks its condition and registers under the same lock `update` holds, so an update
/// either comes before the check (which then sees it) or after the registration (which it then resumes).
///
/// Conditions run under the lock on the updates that may concern them: keep them to a few field reads. A state whose
/// updates come per notification (a publish run's, several per APNs answer) names what its waits read and what its
/// updates change (`WaitTopics`): an update then looks only at the waiters of the parts it changed, in the order they
/// registered, and one that changes nothing waited on looks at none. Without topics every update looks at every
/// waiter, as before.
///
/// `read`, `update` and the waits' already-true check are `@inlinable` (their storage `@usableFromInline`) and
/// `public` (scripts/public-api.txt; Swift 6.3 inlines no `package` function into another module), so each caller
/// gets them specialised for its `State` and result: across modules a generic body looks the types up at run time on
/// every call (Swift's generic metadata cache), and the publish path updates its states several times per
/// notification (docs/BENCHMARKS.md, issue 27). Registering and suspending stay out of line.
public final class WaitableState<State: Sendable>: Sendable {
    @usableFromInline struct Waiter {
        @usableFromInline let id: UInt64
        /// What the condition reads: updates that change none of it skip this waiter without calling it.
        @usableFromInline let topics: WaitTopics
        @usableFromInline let condition: @Sendable (State) -> Bool
        @usableFromInline let continuation: CheckedContinuation<Void, Never>
    }

    @usableFromInline struct Box {
        @usableFromInline var state: State
        /// In the order they registered. An array, not a dictionary keyed by id: an update walks it in place
        /// (a dictionary's iterator copied every waiter, its closure and continuation retained and released, on
        /// every update), and there are a handful at most; `leave` finds its waiter by a linear search.
        @usableFromInline var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Waiters cancelled before they registered (the cancellation handler or the timer ran first).
        var cancelledEarly: Set<UInt64> = []
        /// Waits with a timeout that have not returned: a timer that fires as its wait returns finds its id gone and
        /// leaves no mark behind.
        var timed: Set<UInt64> = []

        init(state: State) {
            self.state = state
        }

        /// Takes waiter `id` out, to be resumed; nil when it is not registered, which marks it so that it does not
        /// register.
        mutating func leave(_ id: UInt64) -> Waiter? {
            if let index = waiters.firstIndex(where: { $0.id == id }) { return waiters.remove(at: index) }
            cancelledEarly.insert(id)
            return nil
        }
    }

    @usableFromInline let box: Locked<Box>

    package init(_ state: State) {
        box = Locked(Box(state: state))
    }

    /// Reads the value.
    @inlinable
    public func read<Result>(_ body: (State) -> Result) -> Result {
        box.withLock { body($0.state) }
    }

    /// Changes the value, then resumes every waiter whose condition now holds, of those that wait on `topics`.
    /// - Parameter topics: what `body` may change that conditions read (every waiter by default). An update that
    ///   names less must change nothing else a condition reads, or a waiter whose condition it made true sleeps on
    ///   until a later update that names it.
    @inlinable @discardableResult
    public func update<Result>(waking topics: WaitTopics = .all, _ body: (inout State) -> Result) -> Result {
        // The resumed continuations go out through a local array, not a `(Result, [...])` tuple: a tuple of a
        // generic type is another metadata lookup.
        var ready: [CheckedContinuation<Void, Never>] = []
        let result = box.withLock { box -> Result in
            let result = body(&box.state)
            guard !box.waiters.isEmpty, !topics.isEmpty else { return result }
            var index = 0
            while index < box.waiters.count {
                if box.waiters[index].topics.isDisjoint(with: topics) || !box.waiters[index].condition(box.state) {
                    index += 1
                } else {
                    ready.append(box.waiters.remove(at: index).continuation)
                }
            }
            return result
        }
        for continuation in ready { continuation.resume() }
        return result
    }

    /// Whether `condition` holds now (the waits' first look, inlined into the caller: no suspension, no
    /// continuation when it does).
    @inlinable
    func holds(_ condition: (State) -> Bool) -> Bool {
        box.withLock { condition($0.state) }
    }

    /// Suspends until `condition` holds (checked at once, then after every update of `topics`) or the task is
    /// cancelled.
    /// - Parameter topics: what `condition` reads (see `update(waking:_:)`); every update by default.
    @inlinable
    public func wait(on topics: WaitTopics = .all, until condition: @escaping @Sendable (State) -> Bool) async {
        if holds(condition) { return }
        await wait(on: topics, until: condition, timeout: nil, cancellable: true)
    }

    /// Suspends until `condition` holds, `timeout` has passed or (when `cancellable`) the task is cancelled.
    /// Not `cancellable`: for waits a cancelled caller must still sit out, such as a shutdown's grace period.
    /// - Returns: whether the condition holds.
    @discardableResult
    package func wait(
        on topics: WaitTopics = .all, until condition: @escaping @Sendable (State) -> Bool, timeout: Duration,
        cancellable: Bool = true
    ) async -> Bool {
        await wait(on: topics, until: condition, timeout: .some(timeout), cancellable: cancellable)
    }

    /// Suspends until `condition` holds, `deadline` passes or the task is cancelled.
    /// - Returns: whether the condition holds.
    @discardableResult
    package func wait(
        on topics: WaitTopics = .all, until condition: @escaping @Sendable (State) -> Bool,
        deadline: MonotonicInstant
    ) async -> Bool {
        await wait(on: topics, until: condition, timeout: .some(deadline.remaining), cancellable: true)
    }

    /// Suspends until `condition` holds, whatever happens to the task: for waits that must not end early, such as
    /// a store's close waiting for its threads to have closed their connections.
    @inlinable
    public func waitIgnoringCancellation(until condition: @escaping @Sendable (State) -> Bool) async {
        if holds(condition) { return }
        await wait(on: .all, until: condition, timeout: nil, cancellable: false)
    }

    /// The one wait: registers under the lock `update` holds, so no update is missed between check and suspension.
    /// After `timeout` (if any) the wait ends as if cancelled; the caller's cancellation does not reach the timer.
    @usableFromInline @discardableResult
    func wait(
        on topics: WaitTopics, until condition: @escaping @Sendable (State) -> Bool, timeout: Duration?,
        cancellable: Bool
    ) async -> Bool {
        // Already true: no continuation, no timer, no suspension (a lane or window with room is the common case,
        // once per notification on the publish path).
        guard
            let id = box.withLock({ box -> UInt64? in
                if condition(box.state) { return nil }
                box.nextID &+= 1
                if timeout != nil { box.timed.insert(box.nextID) }
                return box.nextID
            })
        else { return true }
        // A Dispatch callback kept from starting when the wait ends first, not a task sleeping that is cancelled
        // and awaited: a publish run's checkpoint, lease and fence loops each wait with a deadline, and a task per
        // wait was ~12,000 instructions of a run that ends at once (docs/BENCHMARKS.md "The engine's run of a
        // publish with no targets").
        let timer = timeout.map { timeout in MonotonicTimer.schedule(after: timeout) { [self] in timedOut(id) } }
        if cancellable {
            await withTaskCancellationHandler {
                await suspend(id, on: topics, until: condition)
            } onCancel: {
                leave(id)
            }
        } else {
            await suspend(id, on: topics, until: condition)
        }
        // Ended before it fired: it does not start. One firing now finds the wait gone from `timed` below.
        timer?.cancel()
        // A cancellation or timer that raced with the resume leaves its mark behind; drop it.
        return box.withLock { box -> Bool in
            box.cancelledEarly.remove(id)
            box.timed.remove(id)
            return condition(box.state)
        }
    }

    private func suspend(_ id: UInt64, on topics: WaitTopics, until condition: @escaping @Sendable (State) -> Bool)
        async
    {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = box.withLock { box -> Bool in
                if condition(box.state) || box.cancelledEarly.remove(id) != nil { return true }
                box.waiters.append(Waiter(id: id, topics: topics, condition: condition, continuation: continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Ends wait `id` now (its task was cancelled): resumes it when it is registered, else marks
    /// it so that it does not register.
    private func leave(_ id: UInt64) {
        box.withLock { $0.leave(id) }?.continuation.resume()
    }

    /// Wait `id`'s timeout passed: it ends now, unless it has returned already (its timer fired as it did).
    private func timedOut(_ id: UInt64) {
        box.withLock { box -> Waiter? in
            guard box.timed.contains(id) else { return nil }
            return box.leave(id)
        }?.continuation.resume()
    }

    /// Waiters registered now (for tests: a waiter that left must not stay behind).
    package var waiterCount: Int { box.withLock { $0.waiters.count } }

    /// Ids still marked early-cancelled or timed (for tests: a wait that returned must leave none behind).
    package var marksLeft: Int { box.withLock { $0.cancelledEarly.count + $0.timed.count } }
}

/// What a `WaitableState`'s waits read and its updates change, as bits its owner assigns to parts of its state (a
/// publish run: its results, its state machine). An update names the parts it changed and looks only at the
/// waiters on one of them; `all`, the default on both sides, matches every part.
public struct WaitTopics: OptionSet, Sendable {
    public let rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Every part: a wait on `all` is looked at by every update that changes anything, an update of `all` looks at
    /// every waiter.
    public static let all = WaitTopics(rawValue: .max)
}

/// Runs `operation` until it returns or `deadline` passes, whichever comes first (then it is cancelled: it must
/// return promptly on cancellation), on `MonotonicTimer`: a deadline here is a real one (a checkpoint
/// interval, a grace period), never a polling period.
package func waitAtMost(until deadline: MonotonicInstant, _ operation: @escaping @Sendable () async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await operation() }
        group.addTask { try? await MonotonicTimer.sleep(until: deadline) }
        await group.next()
        group.cancelAll()
    }
}

/// Runs `operation` until it returns or `timeout` has passed, whichever comes first (see `waitAtMost(until:_:)`).
package func waitAtMost(_ timeout: Duration, _ operation: @escaping @Sendable () async -> Void) async {
    await waitAtMost(until: .now + timeout, operation)
}
