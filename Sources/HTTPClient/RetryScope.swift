import Locking

/// The retries of one publish run that are waiting for their moment (a `Retry-After`, a backoff), so that
/// cancelling the run ends them at once instead of letting them go out later (docs/API.md "Cancelling a
/// publish"). The FCM and Web Push senders `wait` on it before each retry and `resume` when the timer fires;
/// `cancel` runs every waiting retry's handler, which reports the notification `Cancelled` and frees its window
/// slot. A retry that `resume`d first goes out; one cancelled first is never sent: exactly one of the two wins.
///
/// Compared by identity, so requests that carry one stay `Equatable`.
package final class RetryScope: Sendable, Hashable {
    private struct State {
        var cancelled = false
        var nextTicket = 0
        var waiting: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Locked(State())

    package init() {}

    /// Whether `cancel` was called: nothing more may be sent for this scope.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Retries waiting right now.
    package var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Registers a retry about to wait. `onCancel` runs once, on the cancelling thread, if the scope is cancelled
    /// before `resume` is called with the returned ticket.
    /// - Returns: the ticket, or nil when the scope is cancelled already (nothing registered: end the retry now).
    package func wait(onCancel: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state -> Int? in
            guard !state.cancelled else { return nil }
            state.nextTicket += 1
            state.waiting[state.nextTicket] = onCancel
            return state.nextTicket
        }
    }

    /// The retry's wait is over. - Returns: false when the scope was cancelled first (its handler ran or is
    /// running): the retry must not be sent.
    package func resume(_ ticket: Int) -> Bool {
        state.withLock { $0.waiting.removeValue(forKey: ticket) != nil }
    }

    /// Ends every waiting retry now (their handlers run here, outside the lock) and refuses later ones.
    package func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            state.cancelled = true
            defer { state.waiting.removeAll() }
            return state.waiting.sorted { $0.key < $1.key }.map(\.value)
        }
        for handler in handlers { handler() }
    }

    package static func == (lhs: RetryScope, rhs: RetryScope) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A run's cancellation ends its requests' waits in admission windows too (`AdmissionWindow`).
extension RetryScope: CancellationSource {
    package func register(onCancel: @escaping @Sendable () -> Void) -> Int? { wait(onCancel: onCancel) }
    package func unregister(_ registration: Int) { _ = resume(registration) }
}
