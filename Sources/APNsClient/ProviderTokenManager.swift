import Locking
import Foundation
import Logging

/// Where signed provider tokens are shared, per (team id, key id), between the processes of one node across
/// restarts and between nodes: APNs has been seen enforcing its 20-minute refresh floor per key, so a process
/// that signs a new token on start (or a second node signing its own) gets `429 TooManyProviderTokenUpdates`.
///
/// The client calls it from its connection threads, only when a token is due (about once per 50 minutes), on
/// `ExpiredProviderToken`, and at most once a second while APNs answers `TooManyProviderTokenUpdates`; a call may
/// block for a database round trip. Errors are logged and the client carries on with its own token.
public protocol ProviderTokenStore: Sendable {
    /// The stored token for (`teamID`, `keyID`), if any.
    func load(teamID: String, keyID: String) throws -> StoredProviderToken?
    /// Stores `new` unless a token other than `expected` (what the caller read; nil: none) is stored, atomically.
    /// - Returns: the token stored afterwards: `new` when this call won, the token another writer stored first
    ///   otherwise.
    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) throws -> StoredProviderToken
}

/// One provider token per (team, key), shared by every request and connection of the key's pools (sandbox and
/// production) and its broadcast calls (one manager per key, from `ProviderTokenManagers`) and, through an optional
/// `ProviderTokenStore`, by restarted processes and other nodes; thread-safe.
///
/// Wraps `ProviderTokenState` with a lock, a signer, the store and an injectable clock. Signing and store calls
/// happen under the lock: they run once every ~50 minutes (a few ms), and holding the lock keeps two threads from
/// minting twice (which is what `TooManyProviderTokenUpdates` punishes).
public final class ProviderTokenManager: Sendable {
    /// What to do with a request APNs answered `429 TooManyProviderTokenUpdates`.
    public enum UpdateRejectedOutcome: Sendable, Equatable {
        /// Re-send now with this token (adopted from the store, newer, or freshly signed past the floor).
        case retryNow(ProviderTokenState.Token)
        /// Re-send later with the current token (nothing newer exists; signing would break the floor).
        case retryLater
    }

    private let state: Locked<ProviderTokenState>
    private let credentials: APNsCredentials
    private let clock: @Sendable () -> Date
    private let store: (any ProviderTokenStore)?
    private let logger: Logger

    /// - Parameters:
    ///   - store: where tokens are shared with restarted processes and other nodes; nil keeps them in memory.
    ///   - clock: the wall clock for `iat`; tests pass a movable one.
    public init(
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
    public var mintCount: Int { state.withLock { $0.mintCount } }
    /// How many tokens this process took over from the store instead of signing.
    public var adoptCount: Int { state.withLock { $0.adoptCount } }

    private var now: Int { Int(clock().timeIntervalSince1970) }

    /// The token to send now: the current one, or (when none or due) one adopted from the store or newly signed.
    /// - Throws: `APNsConfigurationFault.signingFailed` when the key cannot sign.
    public func currentToken() throws(APNsFailure) -> ProviderTokenState.Token {
        let now = self.now
        return try state.withLock { (state: inout ProviderTokenState) throws(APNsFailure) -> ProviderTokenState.Token in
            switch state.token(now: now) {
            case .use(let token): return token
            case .mint(let issuedAt): return try refresh(&state, issuedAt: issuedAt, now: now)
            }
        }
    }

    /// After `403 ExpiredProviderToken` for a request sent with `generation`: the token to retry with, or a
    /// configuration failure when the token is too young to replace and no newer one is stored.
    public func tokenAfterExpiry(generation: Int) throws(APNsFailure) -> ProviderTokenState.Token {
        let now = self.now
        return try state.withLock { (state: inout ProviderTokenState) throws(APNsFailure) -> ProviderTokenState.Token in
            let action = state.expired(generation: generation, now: now)
            if case .retryWith(let token) = action { return token }
            let stored = load()
            if let newer = state.newerAfterExpiry(stored: stored, now: now) { return state.adopt(newer) }
            switch action {
            case .retryWith(let token): return token
            case .mint(let issuedAt): return try signAndStore(&state, issuedAt: issuedAt, expected: stored)
            case .refuse(let age): throw .configuration(.expiredTokenBeforeRefreshFloor(ageSeconds: age))
            }
        }
    }

    /// After `429 TooManyProviderTokenUpdates` for a request sent with `generation`: APNs holds another token for
    /// this key. Adopts a newer or stored token when there is one, signs a new one once the rejected token is past
    /// the 20-minute floor, and otherwise tells the caller to re-send later. Never signs within the floor.
    /// - Throws: `APNsConfigurationFault.signingFailed` when the key cannot sign.
    public func tokenAfterUpdateRejected(generation: Int) throws(APNsFailure) -> UpdateRejectedOutcome {
        let now = self.now
        return try state.withLock { (state: inout ProviderTokenState) throws(APNsFailure) -> UpdateRejectedOutcome in
            var storeChecked = false
            while true {
                switch state.updateRejected(generation: generation, now: now, storeChecked: storeChecked) {
                case .retryWith(let token):
                    return .retryNow(token)
                case .checkStore:
                    storeChecked = true
                    if let stored = state.storeChecked(load(), now: now) {
                        logger.notice("Adopting the stored APNs provider token", ["team": credentials.teamID,
                                                                                   "key": credentials.keyID])
                        return .retryNow(state.adopt(stored))
                    }
                case .mint(let issuedAt):
                    return .retryNow(try refresh(&state, issuedAt: issuedAt, now: now))
                case .wait:
                    return .retryLater
                }
            }
        }
    }

    /// A new token is due: adopt the stored one when it is fresh, else sign one and store it.
    private func refresh(_ state: inout ProviderTokenState, issuedAt: Int, now: Int) throws(APNsFailure)
        -> ProviderTokenState.Token
    {
        let stored = load()
        switch state.refresh(stored: stored, now: now) {
        case .adopt(let token): return state.adopt(token)
        case .sign(let issuedAt): return try signAndStore(&state, issuedAt: issuedAt, expected: stored)
        }
    }

    /// Signs a token and stores it unless another writer replaced `expected` first; then the winner's token is used
    /// and ours is dropped unused (so one token per key per refresh period reaches APNs).
    private func signAndStore(_ state: inout ProviderTokenState, issuedAt: Int, expected: StoredProviderToken?)
        throws(APNsFailure) -> ProviderTokenState.Token
    {
        let ours: StoredProviderToken
        do {
            let jwt = try credentials.key.providerToken(
                keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: issuedAt)
            ours = StoredProviderToken(jwt: jwt, issuedAt: issuedAt)
        } catch {
            throw .configuration(.signingFailed(String(describing: error)))
        }
        guard let store else { return state.install(jwt: ours.jwt, issuedAt: ours.issuedAt) }
        do {
            let winner = try store.compareAndSwap(
                teamID: credentials.teamID, keyID: credentials.keyID, expected: expected, new: ours)
            if winner != ours {
                logger.info("Another process refreshed the APNs provider token first: using its token",
                            ["team": credentials.teamID, "key": credentials.keyID])
            }
            return state.settle(signed: ours, winner: winner)
        } catch {
            // The notification matters more than the store: use our token; a restart may then meet
            // TooManyProviderTokenUpdates, which is retried rather than lost.
            logger.warning("Storing the APNs provider token failed", ["team": credentials.teamID,
                                                                      "error": String(describing: error)])
            return state.install(jwt: ours.jwt, issuedAt: ours.issuedAt)
        }
    }

    /// The stored token, or nil (none, no store, or the store failed: logged).
    private func load() -> StoredProviderToken? {
        guard let store else { return nil }
        do {
            return try store.load(teamID: credentials.teamID, keyID: credentials.keyID)
        } catch {
            logger.warning("Reading the stored APNs provider token failed", ["team": credentials.teamID,
                                                                             "error": String(describing: error)])
            return nil
        }
    }
}
