import Clocks
import Foundation
import Locking

/// Carries out `AccessTokenState` for one service account: the state under a `Locked`, exactly one fetch in
/// flight (the caller the state names fetches; every other caller that needs a token is parked as a callback and
/// woken by that fetch's completion, no polling), assertions signed with the wall clock's `iat`, expiry on the
/// monotonic clock.
final class AccessTokenManager: Sendable {
    typealias Delivery = @Sendable (Result<AccessTokenState.Token, AccessTokenError>) -> Void
    /// Performs one token request and reports its outcome exactly once (from any thread).
    typealias Fetch =
        @Sendable (AccessTokenRequest, @escaping @Sendable (Result<AccessToken, AccessTokenError>) -> Void) -> Void

    private struct Inner {
        var state: AccessTokenState
        var waiters: [Delivery] = []
    }

    private let account: ServiceAccount
    private let clock: @Sendable () -> Date
    private let fetch: Fetch
    private let inner: Locked<Inner>

    init(
        account: ServiceAccount, policy: AccessTokenPolicy, clock: @escaping @Sendable () -> Date,
        fetch: @escaping Fetch
    ) {
        self.account = account
        self.clock = clock
        self.fetch = fetch
        inner = Locked(Inner(state: AccessTokenState(policy: policy)))
    }

    /// Hands `deliver` a token to send with, at once or when the fetch in flight completes; or the fetch failure
    /// when there is none. `rejecting`: FCM answered `401` to a request sent with that token generation, which is
    /// dropped first (`AccessTokenState.rejected`).
    func withToken(rejecting generation: Int? = nil, _ deliver: @escaping Delivery) {
        let now = MonotonicClock.seconds()
        let action = inner.withLock { inner -> AccessTokenState.Action in
            let action =
                generation.map { inner.state.rejected(generation: $0, now: now) } ?? inner.state.acquire(now: now)
            switch action {
            case .refresh, .wait: inner.waiters.append(deliver)
            case .use, .useAndRefresh, .unavailable: break
            }
            return action
        }
        switch action {
        case .use(let token):
            deliver(.success(token))
        case .useAndRefresh(let token):
            startFetch()
            deliver(.success(token))
        case .refresh:
            startFetch()
        case .wait:
            break
        case .unavailable(let error, _):
            deliver(.failure(error))
        }
    }

    /// FCM accepted a request sent with token `generation`.
    func accepted(generation: Int) {
        inner.withLock { $0.state.accepted(generation: generation) }
    }

    /// The state's problem and its consecutive failed fetches.
    var authProblem: (problem: AccessTokenState.AuthProblem, failures: Int)? {
        inner.withLock { inner in inner.state.authProblem.map { ($0, inner.state.failures) } }
    }
    /// The token in use (even one near expiry), for its age and remaining life in `/metrics`.
    var current: AccessTokenState.Token? { inner.withLock { $0.state.current } }
    var fetchCount: Int { inner.withLock { $0.state.fetchCount } }

    private func startFetch() {
        let request: AccessTokenRequest
        do {
            request = try AccessTokenRequest(account: account, issuedAt: Self.unixSeconds(clock()))
        } catch {
            completed(.failure(.transport("signing the assertion failed: \(error)")))
            return
        }
        fetch(request) { [self] result in completed(result) }
    }

    /// The one fetch ended: record it, then wake every parked caller (each asks the state again: a token now, or
    /// the failure while backing off).
    private func completed(_ result: Result<AccessToken, AccessTokenError>) {
        let now = MonotonicClock.seconds()
        let waiters = inner.withLock { inner -> [Delivery] in
            switch result {
            case .success(let token): inner.state.refreshSucceeded(token, now: now)
            case .failure(let error): inner.state.refreshFailed(error, now: now)
            }
            defer { inner.waiters = [] }
            return inner.waiters
        }
        for waiter in waiters { withToken(waiter) }
    }

    /// Whole seconds since the epoch, without trapping on a nonsensical clock.
    static func unixSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e15 else { return 0 }
        return Int(seconds.rounded(.down))
    }
}
