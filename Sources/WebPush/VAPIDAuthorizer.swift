import Foundation
import JWTSigner
import Locking

/// Hands out `Authorization: vapid …` headers per push-service origin, signing a new token only when
/// `VAPIDTokenState` says so. Safe to share between sender threads.
package final class VAPIDAuthorizer: Sendable {
    /// The key pair whose public half every subscription was created with.
    package let keyPair: VAPIDKeyPair
    /// The `sub` claim.
    package let subject: VAPIDSubject
    private let state: Locked<VAPIDTokenState>
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - clock: the wall clock for `exp`; tests inject a movable one.
    package init(
        keyPair: VAPIDKeyPair, subject: VAPIDSubject, policy: VAPIDTokenPolicy = VAPIDTokenPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.keyPair = keyPair
        self.subject = subject
        self.state = Locked(VAPIDTokenState(policy: policy))
        self.clock = clock
    }

    /// The header for a request to `audience` (`WebPushSubscription.audience`).
    package func authorization(audience: String) throws(CryptoError) -> VAPIDAuthorization {
        let now = Self.unixSeconds(clock())
        let action = state.withLock { $0.token(for: audience, now: now) }
        let token: VAPIDTokenState.Token
        switch action {
        case .use(let cached):
            token = cached
        case .sign(let expiresAt):
            // Signed outside the lock: two threads may both sign for a new origin; either token is valid.
            let jwt = try VAPIDToken.make(
                audience: audience, subject: subject, expiresAt: expiresAt, key: keyPair.privateKey)
            token = VAPIDTokenState.Token(jwt: jwt, expiresAt: expiresAt)
            state.withLock { $0.install(token, for: audience, now: now) }
        }
        return VAPIDAuthorization(token: token.jwt, publicKey: keyPair.publicKeyBase64URL)
    }

    /// How many tokens were signed so far.
    package var signCount: Int { state.withLock { $0.signCount } }

    /// How many origins hold a cached token.
    package var cachedOrigins: Int { state.withLock { $0.tokens.count } }

    /// Whole seconds since the epoch, without trapping on a nonsensical clock.
    static func unixSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e15 else { return 0 }
        return Int(seconds.rounded(.down))
    }
}
