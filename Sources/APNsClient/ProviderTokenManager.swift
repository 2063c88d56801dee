import Locking
import Foundation

/// One provider token per (team, key), shared by every request and connection of a pool; thread-safe.
///
/// Wraps `ProviderTokenState` with a lock, a signer and an injectable clock. Signing happens under the lock: it
/// takes ~70 µs once every ~50 minutes, and holding the lock keeps two threads from minting twice (which is what
/// `TooManyProviderTokenUpdates` punishes).
public final class ProviderTokenManager: Sendable {
    private let state: Locked<ProviderTokenState>
    private let credentials: APNsCredentials
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - clock: the wall clock for `iat`; tests pass a movable one.
    public init(
        credentials: APNsCredentials, policy: ProviderTokenPolicy = ProviderTokenPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.credentials = credentials
        self.clock = clock
        self.state = Locked(ProviderTokenState(policy: policy))
    }

    /// How many tokens were minted so far.
    public var mintCount: Int { state.withLock { $0.mintCount } }

    /// The token to send now, minting one when there is none or it reached the refresh age.
    /// - Throws: `APNsConfigurationFault.signingFailed` when the key cannot sign.
    public func currentToken() throws(APNsFailure) -> ProviderTokenState.Token {
        let now = Int(clock().timeIntervalSince1970)
        return try state.withLock { (state: inout ProviderTokenState) throws(APNsFailure) -> ProviderTokenState.Token in
            switch state.token(now: now) {
            case .use(let token): return token
            case .mint(let issuedAt): return try mint(&state, issuedAt: issuedAt)
            }
        }
    }

    /// After `403 ExpiredProviderToken` for a request sent with `generation`: the token to retry with, or a
    /// configuration failure when the token is too young to replace.
    public func tokenAfterExpiry(generation: Int) throws(APNsFailure) -> ProviderTokenState.Token {
        let now = Int(clock().timeIntervalSince1970)
        return try state.withLock { (state: inout ProviderTokenState) throws(APNsFailure) -> ProviderTokenState.Token in
            switch state.expired(generation: generation, now: now) {
            case .retryWith(let token): return token
            case .mint(let issuedAt): return try mint(&state, issuedAt: issuedAt)
            case .refuse(let age): throw .configuration(.expiredTokenBeforeRefreshFloor(ageSeconds: age))
            }
        }
    }

    private func mint(_ state: inout ProviderTokenState, issuedAt: Int) throws(APNsFailure) -> ProviderTokenState.Token {
        do {
            let jwt = try credentials.key.providerToken(
                keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: issuedAt)
            return state.install(jwt: jwt, issuedAt: issuedAt)
        } catch {
            throw .configuration(.signingFailed(String(describing: error)))
        }
    }
}
