import Locking

/// When an instance's own senders (FCM, Web Push, UnifiedPush, HMS) close, as a pure state machine: while the
/// instance is served they stay open; once a change or a delete retires them (the directory serves new ones or
/// none), they close when the last publish run holding them ends, at once when none does. A run that starts after
/// the retirement cannot hold them (it takes the served ones). Shutdown closes whatever is still open, held or not.
/// Each transition says whether the caller must close the senders now; it says so once in a lifetime.
package struct SenderRetirement: Sendable, Equatable {
    /// Runs holding the senders.
    package private(set) var holders = 0
    private(set) var retired = false
    package private(set) var closed = false

    package init() {}

    /// A run starts with these senders. - Returns: false once they are retired: the run takes the served ones
    /// instead. (Senders closed by shutdown are still the served ones: a run starting then fails its deliveries
    /// and is handed back, as before.)
    package mutating func hold() -> Bool {
        guard !retired else { return false }
        holders += 1
        return true
    }

    /// A run that held the senders ended. - Returns: true when they must close now (the last holder of retired
    /// senders).
    package mutating func release() -> Bool {
        holders = max(0, holders - 1)
        return closeIfIdle()
    }

    /// The senders are no longer served. - Returns: true when they must close now (no run holds them).
    package mutating func retire() -> Bool {
        retired = true
        return closeIfIdle()
    }

    /// The server stops. - Returns: true when the senders must close now (not closed before).
    package mutating func shutDown() -> Bool {
        guard !closed else { return false }
        closed = true
        return true
    }

    private mutating func closeIfIdle() -> Bool {
        guard retired, holders == 0, !closed else { return false }
        closed = true
        return true
    }
}

/// One runtime's `SenderRetirement`, shared by every copy of the runtime (a value type), with the close that is
/// under way so shutdown can wait for it.
package final class SenderLifetime: Sendable {
    private struct State {
        var retirement = SenderRetirement()
        var closing: Task<Int, Never>?
    }

    private let state = Locked(State())

    /// See `SenderRetirement.hold()`.
    func hold() -> Bool { state.withLock { $0.retirement.hold() } }

    /// Runs `close` when the transition says so, and remembers it for shutdown.
    func release(close: @escaping @Sendable () async -> Int) { transition({ $0.release() }, close: close) }

    func retire(close: @escaping @Sendable () async -> Int) { transition({ $0.retire() }, close: close) }

    /// Closes now unless closed before; else waits for the close under way (bounded by its grace period).
    /// - Returns: how many notifications got no answer.
    func shutDown(close: @Sendable () async -> Int) async -> Int {
        let (mustClose, underWay) = state.withLock { ($0.retirement.shutDown(), $0.closing) }
        if mustClose { return await close() }
        return await underWay?.value ?? 0
    }

    /// Not closed yet.
    package var isOpen: Bool { state.withLock { !$0.retirement.closed } }

    /// The state machine as it stands (tests).
    var retirement: SenderRetirement { state.withLock { $0.retirement } }

    private func transition(_ event: (inout SenderRetirement) -> Bool, close: @escaping @Sendable () async -> Int) {
        state.withLock { state in
            guard event(&state.retirement) else { return }
            state.closing = Task { await close() }
        }
    }
}
