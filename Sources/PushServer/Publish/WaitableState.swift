import Locking

/// A value behind a lock that tasks can wait on: `wait(until:)` suspends until a condition over the value holds, and
/// every `update` resumes the waiters whose condition it made true. The engine's loops wake on the event they wait
/// for ("every answer is in", "a checkpoint made room", "the run was stopped") instead of polling for it.
///
/// Conditions run under the lock on every update: keep them to a few field reads. A publish has at most a handful
/// of waiters at a time, so an update (one per APNs answer) costs a few comparisons.
final class WaitableState<State: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct Box {
        var state: State
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        /// Waiters cancelled before they registered (the cancellation handler ran first).
        var cancelledEarly: Set<UInt64> = []
    }

    private let box: Locked<Box>

    init(_ state: State) {
        box = Locked(Box(state: state))
    }

    /// Reads the value.
    func read<Result>(_ body: (State) -> Result) -> Result {
        box.withLock { body($0.state) }
    }

    /// Changes the value, then resumes every waiter whose condition now holds.
    @discardableResult
    func update<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, ready) = box.withLock { box -> (Result, [CheckedContinuation<Void, Never>]) in
            let result = body(&box.state)
            guard !box.waiters.isEmpty else { return (result, []) }
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in box.waiters where waiter.condition(box.state) {
                box.waiters[id] = nil
                ready.append(waiter.continuation)
            }
            return (result, ready)
        }
        for continuation in ready { continuation.resume() }
        return result
    }

    /// Suspends until `condition` holds (checked at once, then after every update) or the task is cancelled.
    func wait(until condition: @escaping @Sendable (State) -> Bool) async {
        let id = box.withLock { box -> UInt64 in
            box.nextID &+= 1
            return box.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = box.withLock { box -> Bool in
                    if condition(box.state) || box.cancelledEarly.remove(id) != nil { return true }
                    box.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = box.withLock { box -> Waiter? in
                if let waiter = box.waiters.removeValue(forKey: id) { return waiter }
                box.cancelledEarly.insert(id)
                return nil
            }
            waiter?.continuation.resume()
        }
        // A cancellation that raced with the resume leaves its mark behind; drop it.
        box.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    /// Suspends until `condition` holds, `deadline` passes or the task is cancelled.
    /// - Returns: whether the condition holds.
    @discardableResult
    func wait(until condition: @escaping @Sendable (State) -> Bool, deadline: ContinuousClock.Instant) async -> Bool {
        await waitAtMost(until: deadline) { await self.wait(until: condition) }
        return read(condition)
    }
}

/// Runs `operation` until it returns or `deadline` passes, whichever comes first (then it is cancelled: it must
/// return promptly on cancellation). The deadline is a real one (a checkpoint interval, a grace period), never a
/// polling period.
func waitAtMost(until deadline: ContinuousClock.Instant, _ operation: @escaping @Sendable () async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await operation() }
        group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
        await group.next()
        group.cancelAll()
    }
}
