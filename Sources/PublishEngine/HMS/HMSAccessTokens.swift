import Clocks
import Foundation
import Locking
import Logging
import PushStore

/// The token a send uses (`HMSTokenState.Token`: its value, issue time, lifetime and generation).
typealias HMSAccessToken = HMSTokenState.Token

/// Why no access token could be had.
package enum HMSTokenError: Error, Equatable, CustomStringConvertible {
    /// The OAuth endpoint answered, and not with a token (wrong client ID or secret, app not enabled): the
    /// operator's to fix, shown by `/ready`.
    case refused(String)
    /// No answer (connection, timeout, 5xx): may pass by itself.
    case unavailable(String)

    package var description: String {
        switch self {
        case .refused(let text): return "refused: \(text)"
        case .unavailable(let text): return "unavailable: \(text)"
        }
    }
}

/// One Huawei OAuth client's access token (client-credentials grant), shared by every send of this process and,
/// through the store (`share(through:)`), by every node on the same database and by restarted processes: Huawei
/// blocks an app that asks for more than 1,000 tokens in 5 minutes, so a token is never requested per send, per
/// node or per start. The rules are `HMSTokenState`'s; this class adds the lock, the store calls and the fetch.
///
/// One lookup is in flight per process at a time; senders that need a token meanwhile wait for it. A store that
/// fails is logged and skipped (the notification matters more: the node then fetches for itself).
package final class HMSAccessTokens: Sendable {
    /// What one fetch returns: the token text and its lifetime in seconds.
    typealias Fetch = @Sendable () async -> Result<(token: String, expiresIn: Double), HMSTokenError>

    private struct State {
        var core: HMSTokenState
        var inFlight: Task<Result<HMSAccessToken, HMSTokenError>, Never>?
    }

    private let clientID: String
    private let key: (teamID: String, keyID: String)
    private let fetch: Fetch
    private let clock: @Sendable () -> Date
    private let pollInterval: Double
    private let logger: Logger
    private let state: Locked<State>
    private let store = Locked<(any ProviderTokenStorage)?>(nil)

    /// - Parameters:
    ///   - clientID, clientSecret: the OAuth client whose token this is (the store key: "hms:<client ID>" and a
    ///     fingerprint of the secret, `HMSSharedToken.key`).
    ///   - clock: the wall clock (tokens are compared across nodes); tests pass a movable one.
    ///   - pollInterval: seconds between store reads while another node fetches.
    init(
        clientID: String, clientSecret: String, retryAfterFailure: Int = 10,
        clock: @escaping @Sendable () -> Date = { Date() },
        pollInterval: Double = 0.1, logger: Logger = .disabled, fetch: @escaping Fetch
    ) {
        self.clientID = clientID
        key = HMSSharedToken.key(clientID: clientID, clientSecret: clientSecret)
        self.fetch = fetch
        self.clock = clock
        self.pollInterval = pollInterval
        self.logger = logger
        let owner = UUID().uuidString.lowercased()
        state = Locked(State(core: HMSTokenState(owner: owner, retryAfterFailure: retryAfterFailure)))
    }

    /// Shares the token through `store` from now on (set once at start-up, before the first send).
    package func share(through store: any ProviderTokenStorage) {
        self.store.withLock { $0 = store }
    }

    /// Token requests this process made.
    var fetchCount: Int { state.withLock { $0.core.fetches } }
    /// Stored tokens this process took over instead of asking Huawei.
    package var adoptCount: Int { state.withLock { $0.core.adoptions } }
    /// The last fetch's refusal, while no token has been had since (for `/ready`).
    package var refusal: HMSTokenError? {
        state.withLock { state in
            if case .refused = state.core.lastFailure?.error { return state.core.lastFailure?.error }
            return nil
        }
    }
    /// Whether a token is held (for `/ready`: credentials accepted by Huawei).
    var hasToken: Bool { state.withLock { $0.core.current != nil } }

    private var now: Int { Int(clock().timeIntervalSince1970) }

    /// A token still good for a while; a new one (stored by another node, or fetched) when none is held, it is due
    /// for refresh, or it is the one a send saw rejected (`rejecting`: its generation).
    func token(rejecting generation: Int? = nil) async -> Result<HMSAccessToken, HMSTokenError> {
        let now = self.now
        let outcome = state.withLock {
            state -> Result<
                Task<Result<HMSAccessToken, HMSTokenError>, Never>,
                HMSTokenError
            >? in
            state.core.reject(generation: generation)
            switch state.core.need(now: now) {
            case .use: return nil
            case .fail(let error): return .failure(error)
            case .consultStore:
                if let inFlight = state.inFlight { return .success(inFlight) }
                let task = Task { await self.obtain() }
                state.inFlight = task
                return .success(task)
            }
        }
        switch outcome {
        case nil:
            return state.withLock { $0.core.current.map { .success($0) } } ?? .failure(.unavailable("no token"))
        case .failure(let error)?:
            return .failure(error)
        case .success(let task)?:
            return await task.value
        }
    }

    /// Adopts the stored token, waits for another node's fetch, or claims the fetch and makes it.
    private func obtain() async -> Result<HMSAccessToken, HMSTokenError> {
        let result = await lookUp()
        state.withLock { $0.inFlight = nil }
        return result
    }

    private func lookUp() async -> Result<HMSAccessToken, HMSTokenError> {
        guard let store = store.withLock({ $0 }) else { return await fetchAndStore(claim: nil, in: nil) }
        while true {
            let record: ProviderTokenRecord?
            do {
                record = try await store.providerToken(teamID: key.teamID, keyID: key.keyID)
            } catch {
                logger.warning(
                    "Reading the stored HMS access token failed",
                    [
                        "client": clientID,
                        "error": String(describing: error),
                    ])
                return await fetchAndStore(claim: nil, in: nil)
            }
            let now = self.now
            let stored = record.flatMap(HMSSharedToken.init(record:))
            switch state.withLock({ $0.core.next(stored: stored, now: now) }) {
            case .adopt(let shared):
                if let token = state.withLock({ $0.core.adopt(shared) }) { return .success(token) }
            case .wait(let until):
                let seconds = min(pollInterval, Double(max(until - now, 0)) + 0.01)
                try? await MonotonicTimer.sleep(for: .seconds(seconds))
            case .claim(let claim):
                do {
                    let winner = try await store.swapProviderToken(
                        teamID: key.teamID, keyID: key.keyID, expectedJWT: record?.jwt, new: claim.record)
                    // Lost: another node claimed or stored first; the next read shows which.
                    if winner == claim.record { return await fetchAndStore(claim: claim, in: store) }
                } catch {
                    logger.warning(
                        "Claiming the HMS access token fetch failed",
                        [
                            "client": clientID,
                            "error": String(describing: error),
                        ])
                    return await fetchAndStore(claim: nil, in: nil)
                }
            }
        }
    }

    /// Asks Huawei for a token and, when this node holds the claim, replaces the claim with it (or, on failure,
    /// releases the claim so another node may try at once rather than after the claim lapses).
    private func fetchAndStore(claim: HMSSharedToken?, in store: (any ProviderTokenStorage)?)
        async -> Result<HMSAccessToken, HMSTokenError>
    {
        let result = await fetch()
        let now = self.now
        let replacement: HMSSharedToken
        let outcome: Result<HMSAccessToken, HMSTokenError>
        switch result {
        case .success(let answer):
            replacement = .token(value: answer.token, issuedAt: now, lifetime: max(1, Int(answer.expiresIn)))
            outcome = state.withLock { state in
                state.core.adopt(replacement, fetched: true).map { .success($0) } ?? .failure(.unavailable("no token"))
            }
        case .failure(let error):
            replacement = .claim(owner: "released", since: 0)
            state.withLock { $0.core.failed(error, now: now) }
            outcome = .failure(error)
        }
        if let store, let claim {
            do {
                let winner = try await store.swapProviderToken(
                    teamID: key.teamID, keyID: key.keyID, expectedJWT: claim.record.jwt, new: replacement.record)
                if winner != replacement.record {
                    // Our claim lapsed during a slow fetch and another node stored its own token: both are valid.
                    logger.info("Another node stored an HMS access token first", ["client": clientID])
                }
            } catch {
                logger.warning(
                    "Storing the HMS access token failed",
                    [
                        "client": clientID,
                        "error": String(describing: error),
                    ])
            }
        }
        return outcome
    }
}
