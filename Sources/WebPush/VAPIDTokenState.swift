/// When to sign VAPID tokens and how many to keep.
package struct VAPIDTokenPolicy: Sendable, Hashable {
    /// `exp` − signing time, seconds. Default 12 hours, what pywebpush, web-push (node) and webpush-go use;
    /// at most `VAPIDToken.maxLifetime` (24 h, RFC 8292 §2).
    package var lifetime: Int
    /// A token with less than this left (seconds) is replaced before use, so none expires in flight or on a push
    /// service whose clock runs ahead. Default 1 hour.
    package var renewBefore: Int
    /// Push-service origins with a cached token; beyond it the token closest to expiry is dropped. Subscriptions
    /// name their origin, so the cache must not grow with what browsers send. Default 256.
    package var maxOrigins: Int

    /// - Precondition: `0 ≤ renewBefore < lifetime ≤ 24 h` and `maxOrigins ≥ 1` (configuration is validated
    ///   before it gets here).
    package init(lifetime: Int = 12 * 60 * 60, renewBefore: Int = 60 * 60, maxOrigins: Int = 256) {
        precondition(
            renewBefore >= 0 && renewBefore < lifetime && lifetime <= VAPIDToken.maxLifetime,
            "VAPID token lifetime must exceed renewBefore and be at most 24 h")
        precondition(maxOrigins >= 1, "maxOrigins must be at least 1")
        self.lifetime = lifetime
        self.renewBefore = renewBefore
        self.maxOrigins = maxOrigins
    }
}

/// The pure core of the VAPID token cache: one token per push-service origin, which to use and when to sign.
/// No clock, no signing, no lock, so every rule is tested by moving `now`.
package struct VAPIDTokenState: Sendable, Equatable {
    /// A signed token.
    package struct Token: Sendable, Equatable {
        package var jwt: String
        /// `exp`, UNIX seconds.
        package var expiresAt: Int

        package init(jwt: String, expiresAt: Int) {
            self.jwt = jwt
            self.expiresAt = expiresAt
        }
    }

    /// What the caller must do to authorize a request to one origin.
    package enum Action: Sendable, Equatable {
        case use(Token)
        /// Sign a token with this `exp`, then `install` it.
        case sign(expiresAt: Int)
    }

    package let policy: VAPIDTokenPolicy
    /// Tokens by origin.
    package private(set) var tokens: [String: Token] = [:]
    /// How many tokens were installed (signed) so far.
    package private(set) var signCount = 0

    package init(policy: VAPIDTokenPolicy = VAPIDTokenPolicy()) {
        self.policy = policy
    }

    /// The token for `audience` at `now` (UNIX seconds), or the `exp` to sign a new one with.
    package func token(for audience: String, now: Int) -> Action {
        if let token = tokens[audience], usable(token, now: now) { return .use(token) }
        return .sign(expiresAt: now + policy.lifetime)
    }

    /// Whether `token` may still be sent at `now`: more than `renewBefore` left, and not more than `lifetime`
    /// ahead, which also catches a clock stepped backwards (the push service would see `exp` over 24 h away).
    package func usable(_ token: Token, now: Int) -> Bool {
        let left = token.expiresAt - now
        return left > policy.renewBefore && left <= policy.lifetime
    }

    /// Records a token signed for `audience`. When `maxOrigins` is reached, unusable tokens go first, then the one
    /// closest to expiry.
    package mutating func install(_ token: Token, for audience: String, now: Int) {
        signCount += 1
        if tokens[audience] == nil, tokens.count >= policy.maxOrigins {
            tokens = tokens.filter { usable($0.value, now: now) }
            if tokens.count >= policy.maxOrigins,
                let oldest = tokens.min(by: { ($0.value.expiresAt, $0.key) < ($1.value.expiresAt, $1.key) })
            {
                tokens[oldest.key] = nil
            }
        }
        tokens[audience] = token
    }
}
