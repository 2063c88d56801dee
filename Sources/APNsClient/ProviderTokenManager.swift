import Foundation
import Locking
import Logging

/// Where signed provider tokens are shared, per (team id, key id), between the processes of one node across
/// restarts and between nodes: APNs has been seen enforcing its 20-minute refresh floor per key, so a process
/// that signs a new token on start (or a second node signing its own) gets `429 TooManyProviderTokenUpdates`.
///
/// The client calls it only when a token is due (about once per 50 minutes), on `ExpiredProviderToken`, and at
/// most once a second while APNs answers `TooManyProviderTokenUpdates`, always from a task: a connection thread
/// hands the request that needs a token to a task and carries on with its other streams meanwhile. A call may
/// take a database round trip. Errors are logged and the client carries on with its own token.
package protocol ProviderTokenStore: Sendable {
    /// The stored token for (`teamID`, `keyID`), if any.
    func load(teamID: String, keyID: String) async throws -> StoredProviderToken?
    /// Stores `new` unless a token other than `expected` (what the caller read; nil: none) is stored, atomically.
    /// - Returns: the token stored afterwards: `new` when this call won, the token another writer stored first
    ///   otherwise.
    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) async throws -> StoredProviderToken
}

/// One provider token per (team, key), shared by every request and connection of the key's pools (sandbox and
/// production) and its broadcast calls (one manager per key, from `ProviderTokenManagers`) and, through an optional
/// `ProviderTokenStore`, by restarted processes and other nodes; thread-safe.
///
/// Wraps `ProviderTokenState` with a lock, a signer, the store and an injectable clock. A fresh token is read
/// without waiting (`readyToken`); whatever may sign or call the store runs in turns (`KeyedTurns`, suspended
/// callers, no blocked thread), one at a time, which keeps two callers from minting twice (what
/// `TooManyProviderTokenUpdates` punishes). The lock is held only between the turn's awaits.
package final class ProviderTokenManager: Sendable {
    /// What to do with a request APNs answered `429 TooManyProviderTokenUpdates`.
    package enum UpdateRejectedOutcome: Sendable, Equatable {
        /// Re-send now with this token (adopted from the store, newer, or freshly signed past the floor).
        case retryNow(ProviderTokenState.Token)
        /// Re-send later with the current token (nothing newer exists; signing would break the floor).
        case retryLater
    }

    private let state: Locked<ProviderTokenState>
    /// Serialises refreshes: one caller at a time signs or reads and writes the store.
    private let turns = KeyedTurns<Int>()
    private let credentials: APNsCredentials
    private let clock: @Sendable () -> Date
    private let store: (any ProviderTokenStore)?
    private let logger: Logger

    /// - Parameters:
    ///   - store: where tokens are shared with restarted processes and other nodes; nil keeps them in memory.
    ///   - clock: the wall clock for `iat`; tests pass a movable one.
    package init(
        credentials: APNsCredentials, policy: ProviderTokenPolicy = ProviderTokenPolicy(),
        store: (any ProviderTokenStore)? = nil, clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = .disabled
    ) {
        self.credentials = credentials
        self.clock = clock
        self.store = store
        self.logger = logger
        self.state = Locked(ProviderTokenState(policy: policy))
    }

    /// How many tokens this process signed.
    package var mintCount: Int { state.withLock { $0.mintCount } }
    /// How many tokens this process took over from the store instead of signing.
    package var adoptCount: Int { state.withLock { $0.adoptCount } }

    private var now: Int { Int(clock().timeIntervalSince1970) }

    /// The current token when it is fresh: no signing, no store, no waiting (a connection thread calls it for
    /// every request). nil: one is due, get it from `currentToken()` in a task.
    package func readyToken() -> ProviderTokenState.Token? {
        let now = self.now
        return state.withLock { state -> ProviderTokenState.Token? in
            if case .use(let token) = state.token(now: now) { return token }
            return nil
        }
    }

    /// The token to send now: the current one, or (when none or due) one adopted from the store or newly signed.
    /// - Throws: `APNsConfigurationFault.signingFailed` when the key cannot sign.
    package func currentToken() async throws(APNsFailure) -> ProviderTokenState.Token {
        if let ready = readyToken() { return ready }
        return try await inTurn { () async throws(APNsFailure) -> ProviderTokenState.Token in
            // Another caller's turn may have refreshed it meanwhile.
            let now = self.now
            switch self.state.withLock({ $0.token(now: now) }) {
            case .use(let token): return token
            case .mint(let issuedAt): return try await self.refresh(issuedAt: issuedAt, now: now)
            }
        }
    }

    /// After `403 ExpiredProviderToken` for a request sent with `generation`: the token to retry with, or a
    /// configuration failure when the token is too young to replace and no newer one is stored.
    package func tokenAfterExpiry(generation: Int) async throws(APNsFailure) -> ProviderTokenState.Token {
        try await inTurn { () async throws(APNsFailure) -> ProviderTokenState.Token in
            let now = self.now
            let action = self.state.withLock { $0.expired(generation: generation, now: now) }
            if case .retryWith(let token) = action { return token }
            let stored = await self.load()
            let adopted = self.state.withLock { state -> ProviderTokenState.Token? in
                state.newerAfterExpiry(stored: stored, now: now).map { state.adopt($0) }
            }
            if let adopted { return adopted }
            switch action {
            case .retryWith(let token): return token
            case .mint(let issuedAt): return try await self.signAndStore(issuedAt: issuedAt, expected: stored)
            case .refuse(let age): throw .configuration(.expiredTokenBeforeRefreshFloor(ageSeconds: age))
            }
        }
    }

    /// After `429 TooManyProviderTokenUpdates` for a request sent with `generation`: APNs holds another token for
    /// this key. Adopts a newer or stored token when there is one, signs a new one once the rejected token is past
    /// the 20-minute floor, and otherwise tells the caller to re-send later. Never signs within the floor.
    /// - Throws: `APNsConfigurationFault.signingFailed` when the key cannot sign.
    package func tokenAfterUpdateRejected(generation: Int) async throws(APNsFailure) -> UpdateRejectedOutcome {
        try await inTurn { () async throws(APNsFailure) -> UpdateRejectedOutcome in
            let now = self.now
            var storeChecked = false
            while true {
                let action = self.state.withLock {
                    $0.updateRejected(generation: generation, now: now, storeChecked: storeChecked)
                }
                switch action {
                case .retryWith(let token):
                    return .retryNow(token)
                case .checkStore:
                    storeChecked = true
                    let loaded = await self.load()
                    let adopted = self.state.withLock { state -> ProviderTokenState.Token? in
                        state.storeChecked(loaded, now: now).map { state.adopt($0) }
                    }
                    if let adopted {
                        self.logger.notice(
                            "Adopting the stored APNs provider token",
                            ["team": self.credentials.teamID, "key": self.credentials.keyID])
                        return .retryNow(adopted)
                    }
                case .mint(let issuedAt):
                    return .retryNow(try await self.refresh(issuedAt: issuedAt, now: now))
                case .wait:
                    return .retryLater
                }
            }
        }
    }

    /// Runs `body` in this manager's turn: after every earlier caller's body has returned.
    private func inTurn<T: Sendable>(_ body: () async throws(APNsFailure) -> T) async throws(APNsFailure) -> T {
        let result = await turns.withTurn(0) { () async -> Result<T, APNsFailure> in
            do throws(APNsFailure) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A new token is due: adopt the stored one when it is fresh, else sign one and store it.
    private func refresh(issuedAt: Int, now: Int) async throws(APNsFailure) -> ProviderTokenState.Token {
        let stored = await load()
        switch state.withLock({ $0.refresh(stored: stored, now: now) }) {
        case .adopt(let token): return state.withLock { $0.adopt(token) }
        case .sign(let issuedAt): return try await signAndStore(issuedAt: issuedAt, expected: stored)
        }
    }

    /// Signs a token and stores it unless another writer replaced `expected` first; then the winner's token is used
    /// and ours is dropped unused (so one token per key per refresh period reaches APNs).
    private func signAndStore(issuedAt: Int, expected: StoredProviderToken?) async throws(APNsFailure)
        -> ProviderTokenState.Token
    {
        let ours: StoredProviderToken
        do {
            let jwt = try credentials.key.providerToken(
                keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: issuedAt)
            ours = StoredProviderToken(jwt: jwt, issuedAt: issuedAt)
        } catch {
            throw .configuration(.signingFailed(String(describing: error)))
        }
        guard let store else { return state.withLock { $0.install(jwt: ours.jwt, issuedAt: ours.issuedAt) } }
        do {
            let winner = try await store.compareAndSwap(
                teamID: credentials.teamID, keyID: credentials.keyID, expected: expected, new: ours)
            if winner != ours {
                logger.info(
                    "Another process refreshed the APNs provider token first: using its token",
                    ["team": credentials.teamID, "key": credentials.keyID])
            }
            return state.withLock { $0.settle(signed: ours, winner: winner) }
        } catch {
            // The notification matters more than the store: use our token; a restart may then meet
            // TooManyProviderTokenUpdates, which is retried rather than lost.
            logger.warning(
                "Storing the APNs provider token failed",
                [
                    "team": credentials.teamID,
                    "error": String(describing: error),
                ])
            return state.withLock { $0.install(jwt: ours.jwt, issuedAt: ours.issuedAt) }
        }
    }

    /// The stored token, or nil (none, no store, or the store failed: logged).
    private func load() async -> StoredProviderToken? {
        guard let store else { return nil }
        do {
            return try await store.load(teamID: credentials.teamID, keyID: credentials.keyID)
        } catch {
            logger.warning(
                "Reading the stored APNs provider token failed",
                [
                    "team": credentials.teamID,
                    "error": String(describing: error),
                ])
            return nil
        }
    }
}
