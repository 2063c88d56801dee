/// When to mint a provider token (apns.md §3): Apple rejects tokens over 60 minutes old and answers
/// `TooManyProviderTokenUpdates` to tokens changed more than once per 20 minutes on a connection.
public struct ProviderTokenPolicy: Sendable, Hashable {
    /// A token this old (seconds) is replaced before use. Default 50 minutes, like sideshow/apns2.
    public var refreshAge: Int
    /// Never mint a token less than this many seconds after the previous one. Default 20 minutes (Apple's rule).
    public var minimumRefreshInterval: Int

    public init(refreshAge: Int = 50 * 60, minimumRefreshInterval: Int = 20 * 60) {
        precondition(refreshAge >= minimumRefreshInterval && refreshAge < 60 * 60, "refresh between 20 and 60 min")
        self.refreshAge = refreshAge
        self.minimumRefreshInterval = minimumRefreshInterval
    }
}

/// The pure core of provider-token management: which token to use and when to mint, given the time. No clock,
/// no signing, no locks, so every rule is tested by moving `now`.
public struct ProviderTokenState: Sendable, Equatable {
    /// A signed token and its issue time.
    public struct Token: Sendable, Equatable {
        public var jwt: String
        /// `iat`, UNIX seconds.
        public var issuedAt: Int
        /// Increments with every minted token, so a failure can be tied to the token it was sent with.
        public var generation: Int
    }

    /// What the caller must do to get a token.
    public enum Action: Sendable, Equatable {
        case use(Token)
        /// Sign a new token with this `iat`, then `install` it.
        case mint(issuedAt: Int)
    }

    /// What to do after APNs answered `403 ExpiredProviderToken` to a request signed with some generation.
    public enum ExpiredAction: Sendable, Equatable {
        /// A newer token already exists: re-send with it.
        case retryWith(Token)
        /// Sign a new token with this `iat`, `install` it, then re-send.
        case mint(issuedAt: Int)
        /// The token is younger than the refresh floor: minting would risk `TooManyProviderTokenUpdates`.
        case refuse(ageSeconds: Int)
    }

    public let policy: ProviderTokenPolicy
    public private(set) var current: Token?
    /// How many tokens were minted.
    public private(set) var mintCount = 0

    public init(policy: ProviderTokenPolicy = ProviderTokenPolicy()) {
        self.policy = policy
    }

    /// The token to send at `now` (UNIX seconds), or an instruction to mint one.
    public func token(now: Int) -> Action {
        guard let current else { return .mint(issuedAt: now) }
        let age = now - current.issuedAt
        // A clock stepping backwards gives a negative age; the token is then still fresh by Apple's measure too.
        if age >= policy.refreshAge { return .mint(issuedAt: now) }
        return .use(current)
    }

    /// Records a freshly minted token and returns it.
    @discardableResult
    public mutating func install(jwt: String, issuedAt: Int) -> Token {
        mintCount += 1
        let token = Token(jwt: jwt, issuedAt: issuedAt, generation: mintCount)
        current = token
        return token
    }

    /// Decides how to recover from `ExpiredProviderToken` for a request sent with `generation`.
    public func expired(generation: Int, now: Int) -> ExpiredAction {
        guard let current else { return .mint(issuedAt: now) }
        if current.generation > generation { return .retryWith(current) }
        let age = now - current.issuedAt
        if age < policy.minimumRefreshInterval { return .refuse(ageSeconds: age) }
        return .mint(issuedAt: now)
    }
}
