import Clocks
import Foundation
import Locking

/// An OAuth 2.0 access token for Huawei Push Kit, with when it stops being used (monotonic seconds).
struct HMSAccessToken: Sendable, Equatable {
    let value: String
    /// Monotonic seconds after which the token is replaced (its `expires_in` less the refresh margin).
    let refreshAt: Double
    /// Counts fetched tokens: a send that saw this token rejected asks for a newer one, not the same.
    let generation: Int
}

/// Why no access token could be had.
enum HMSTokenError: Error, Equatable, CustomStringConvertible {
    /// The OAuth endpoint answered, and not with a token (wrong client ID or secret, app not enabled): the
    /// operator's to fix, shown by `/ready`.
    case refused(String)
    /// No answer (connection, timeout, 5xx): may pass by itself.
    case unavailable(String)

    var description: String {
        switch self {
        case .refused(let text): return "refused: \(text)"
        case .unavailable(let text): return "unavailable: \(text)"
        }
    }
}

/// The instance's Huawei OAuth token (client-credentials grant), fetched when first needed, reused by every send,
/// and replaced before it expires: Huawei blocks an app that asks for more than 1,000 tokens in 5 minutes, so a
/// token is never requested per send. One fetch is in flight at a time; senders that need a token meanwhile wait
/// for it. After a failed fetch the failure is answered for `retryAfterFailure` seconds without asking again, so
/// a refused secret costs one request per period, not one per batch.
///
/// Scope: one cache per instance per node (the token is not shared through the store, unlike the APNs provider
/// token); N nodes ask N times an hour, far below Huawei's limit.
final class HMSAccessTokens: Sendable {
    /// What one fetch returns: the token text and its lifetime in seconds.
    typealias Fetch = @Sendable () async -> Result<(token: String, expiresIn: Double), HMSTokenError>

    private struct State {
        var current: HMSAccessToken?
        var inFlight: Task<Result<HMSAccessToken, HMSTokenError>, Never>?
        var lastFailure: (error: HMSTokenError, at: Double)?
        var fetches = 0
        var generation = 0
    }

    private let fetch: Fetch
    private let retryAfterFailure: Double
    private let state = Locked(State())

    init(retryAfterFailure: Double = 10, fetch: @escaping Fetch) {
        self.fetch = fetch
        self.retryAfterFailure = retryAfterFailure
    }

    /// Token requests made so far.
    var fetchCount: Int { state.withLock { $0.fetches } }
    /// The last fetch's refusal, while no token has been had since (for `/ready`).
    var refusal: HMSTokenError? {
        state.withLock { state in
            if case .refused = state.lastFailure?.error { return state.lastFailure?.error }
            return nil
        }
    }
    /// Whether a token is held (for `/ready`: credentials accepted by Huawei).
    var hasToken: Bool { state.withLock { $0.current != nil } }

    /// A token still good for a while; a new one when none is held, it is due for refresh, or it is the one a
    /// send saw rejected (`rejecting`: its generation).
    func token(rejecting generation: Int? = nil) async -> Result<HMSAccessToken, HMSTokenError> {
        let now = MonotonicClock.seconds()
        let task = state.withLock { state -> Task<Result<HMSAccessToken, HMSTokenError>, Never>? in
            if let current = state.current, now < current.refreshAt, current.generation != generation {
                return nil
            }
            if let inFlight = state.inFlight { return inFlight }
            if let failure = state.lastFailure, now - failure.at < retryAfterFailure, state.current == nil {
                return Task { .failure(failure.error) }
            }
            state.fetches += 1
            let task = Task { await self.fetchOnce() }
            state.inFlight = task
            return task
        }
        guard let task else {
            return state.withLock { $0.current.map { .success($0) } } ?? .failure(.unavailable("no token"))
        }
        return await task.value
    }

    private func fetchOnce() async -> Result<HMSAccessToken, HMSTokenError> {
        let result = await fetch()
        let now = MonotonicClock.seconds()
        return state.withLock { state in
            state.inFlight = nil
            switch result {
            case .success(let answer):
                state.generation += 1
                // Refresh 5 minutes early, or at half its life for a short-lived token.
                let margin = min(300, answer.expiresIn / 2)
                let token = HMSAccessToken(value: answer.token, refreshAt: now + answer.expiresIn - margin,
                                           generation: state.generation)
                state.current = token
                state.lastFailure = nil
                return .success(token)
            case .failure(let error):
                state.current = nil
                state.lastFailure = (error, now)
                return .failure(error)
            }
        }
    }
}
