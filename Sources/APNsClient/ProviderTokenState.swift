/// When to mint a provider token (docs/APNS.md §3): Apple rejects tokens over 60 minutes old and answers
/// `TooManyProviderTokenUpdates` to tokens changed more than once per 20 minutes on a connection.
package struct ProviderTokenPolicy: Sendable, Hashable {
    /// A token this old (seconds) is replaced before use. Default 50 minutes, like sideshow/apns2.
    package var refreshAge: Int
    /// Never mint a token less than this many seconds after the previous one. Default 20 minutes (Apple's rule).
    package var minimumRefreshInterval: Int

    package init(refreshAge: Int = 50 * 60, minimumRefreshInterval: Int = 20 * 60) {
        precondition(refreshAge >= minimumRefreshInterval && refreshAge < 60 * 60, "refresh between 20 and 60 min")
        self.refreshAge = refreshAge
        self.minimumRefreshInterval = minimumRefreshInterval
    }
}

/// A signed provider token as it is shared through a `ProviderTokenStore`.
package struct StoredProviderToken: Sendable, Hashable {
    /// The compact JWT (no `bearer ` prefix).
    package var jwt: String
    /// Its `iat`, UNIX seconds.
    package var issuedAt: Int

    package init(jwt: String, issuedAt: Int) {
        self.jwt = jwt
        self.issuedAt = issuedAt
    }
}

/// The pure core of provider-token management: which token to use and when to mint, adopt a stored one, or wait,
/// given the time and what the shared store holds. No clock, no signing, no locks, no store access, so every rule
/// is tested by moving `now`.
///
/// Tokens are shared through a store (a restarted process or another node finds the token APNs already knows)
/// because APNs has been seen enforcing the 20-minute refresh floor per key, not only per connection: a process
/// that signs a new token on every start gets `429 TooManyProviderTokenUpdates`.
package struct ProviderTokenState: Sendable, Equatable {
    /// A token in use and its issue time.
    package struct Token: Sendable, Equatable {
        package var jwt: String
        /// `iat`, UNIX seconds.
        package var issuedAt: Int
        /// Increments with every token taken into use (minted or adopted), so a failure can be tied to the token
        /// it was sent with.
        package var generation: Int

        /// The token as the store keeps it.
        package var stored: StoredProviderToken { StoredProviderToken(jwt: jwt, issuedAt: issuedAt) }
    }

    /// What the caller must do to get a token.
    package enum Action: Sendable, Equatable {
        case use(Token)
        /// A new token is due: look in the store (`refresh(stored:now:)`), sign with this `iat` only if it holds
        /// nothing newer.
        case mint(issuedAt: Int)
    }

    /// What to do once the store was read because a new token is due.
    package enum RefreshAction: Sendable, Equatable {
        /// Another process or node already stored a fresh token: `adopt` it, sign nothing.
        case adopt(StoredProviderToken)
        /// Sign with this `iat`, then store it with a compare-and-swap against what was read; the winner's token
        /// is the one to use (`install` if ours won, `adopt` otherwise).
        case sign(issuedAt: Int)
    }

    /// What to do after APNs answered `403 ExpiredProviderToken` to a request signed with some generation.
    package enum ExpiredAction: Sendable, Equatable {
        /// A newer token already exists: re-send with it.
        case retryWith(Token)
        /// Sign a new token with this `iat` (after looking in the store), `install` it, then re-send.
        case mint(issuedAt: Int)
        /// The token is younger than the refresh floor: minting would risk `TooManyProviderTokenUpdates`.
        case refuse(ageSeconds: Int)
    }

    /// What to do after APNs answered `429 TooManyProviderTokenUpdates` to a request signed with some generation:
    /// APNs holds another token for this key, less than 20 minutes old. The notification is never dropped for it.
    package enum UpdateRejectedAction: Sendable, Equatable {
        /// A newer token than the rejected one is in use already: re-send with it at once.
        case retryWith(Token)
        /// Read the store (at most once per `storeCheckInterval`): another node may hold the token APNs knows.
        case checkStore
        /// The rejected token is past the refresh floor: sign a new one with this `iat` (through the store).
        case mint(issuedAt: Int)
        /// Nothing to adopt and signing would break the floor: re-send later with the current token. Signing
        /// becomes possible at `signableAt` (UNIX seconds).
        case wait(signableAt: Int)
    }

    /// What an APNs answer about the provider token calls for. One rule for device connections (through
    /// `APNsRetryPolicy`) and broadcast calls (`APNsBroadcastClient`); how long each waits is theirs.
    package enum Recovery: Sendable, Equatable {
        /// `403 ExpiredProviderToken`, the request's first: get a new token
        /// (`ProviderTokenManager.tokenAfterExpiry`) and re-send at once.
        case refresh
        /// `429 TooManyProviderTokenUpdates`: APNs holds another token for the key; ask
        /// `ProviderTokenManager.tokenAfterUpdateRejected` whether to re-send now with another token or later.
        case resolveRejected
        /// Any other credential reason, or `ExpiredProviderToken` again after the refresh: the credentials are at
        /// fault, and re-sending cannot help.
        case credentialFault
    }

    /// The recovery APNs' `reason` calls for, for a request that already had its one refresh (`refreshed`) or not;
    /// nil when the reason is not about the credentials.
    package static func recovery(after reason: APNsReason?, refreshed: Bool) -> Recovery? {
        guard let reason, reason.isCredentialFault else { return nil }
        if reason == .expiredProviderToken { return refreshed ? .credentialFault : .refresh }
        if reason == .tooManyProviderTokenUpdates { return .resolveRejected }
        return .credentialFault
    }

    /// Seconds between store reads caused by `TooManyProviderTokenUpdates` (every rejected request asks).
    package static let storeCheckInterval = 1

    package let policy: ProviderTokenPolicy
    package private(set) var current: Token?
    /// How many tokens this process signed.
    package private(set) var mintCount = 0
    /// How many stored tokens this process took over instead of signing.
    package private(set) var adoptCount = 0
    /// When the store was last read after `TooManyProviderTokenUpdates`.
    package private(set) var lastStoreCheck: Int?
    private var generations = 0

    package init(policy: ProviderTokenPolicy = ProviderTokenPolicy()) {
        self.policy = policy
    }

    /// The token to send at `now` (UNIX seconds), or an instruction to get a new one.
    package func token(now: Int) -> Action {
        guard let current else { return .mint(issuedAt: now) }
        let age = now - current.issuedAt
        // A clock stepping backwards gives a negative age; the token is then still fresh by Apple's measure too.
        if age >= policy.refreshAge { return .mint(issuedAt: now) }
        return .use(current)
    }

    /// A new token is due (`token(now:)` said `.mint`) and the store holds `stored`: adopt it when it is fresh
    /// and not older than ours, else sign.
    package func refresh(stored: StoredProviderToken?, now: Int) -> RefreshAction {
        if let stored, adoptable(stored, now: now, maxAge: policy.refreshAge) { return .adopt(stored) }
        return .sign(issuedAt: now)
    }

    /// Records a token this process signed (and won the store with) and returns it.
    @discardableResult
    package mutating func install(jwt: String, issuedAt: Int) -> Token {
        mintCount += 1
        return use(StoredProviderToken(jwt: jwt, issuedAt: issuedAt))
    }

    /// Takes over a token another process or node signed and returns it.
    @discardableResult
    package mutating func adopt(_ stored: StoredProviderToken) -> Token {
        if let current, current.jwt == stored.jwt { return current }
        adoptCount += 1
        return use(stored)
    }

    /// After a compare-and-swap of our signed token `ours`: the store now holds `winner`.
    @discardableResult
    package mutating func settle(signed ours: StoredProviderToken, winner: StoredProviderToken) -> Token {
        winner == ours ? install(jwt: ours.jwt, issuedAt: ours.issuedAt) : adopt(winner)
    }

    private mutating func use(_ stored: StoredProviderToken) -> Token {
        generations += 1
        let token = Token(jwt: stored.jwt, issuedAt: stored.issuedAt, generation: generations)
        current = token
        return token
    }

    /// Decides how to recover from `ExpiredProviderToken` for a request sent with `generation`.
    package func expired(generation: Int, now: Int) -> ExpiredAction {
        guard let current else { return .mint(issuedAt: now) }
        if current.generation > generation { return .retryWith(current) }
        let age = now - current.issuedAt
        if age < policy.minimumRefreshInterval { return .refuse(ageSeconds: age) }
        return .mint(issuedAt: now)
    }

    /// After `ExpiredProviderToken`: a stored token that another process refreshed meanwhile, if any.
    package func newerAfterExpiry(stored: StoredProviderToken?, now: Int) -> StoredProviderToken? {
        guard let stored, adoptable(stored, now: now, maxAge: policy.refreshAge),
            stored.issuedAt > (current?.issuedAt ?? Int.min)
        else { return nil }
        return stored
    }

    /// Decides how to recover from `TooManyProviderTokenUpdates` for a request sent with `generation`.
    /// `storeChecked` is true once the caller has read the store for this decision (and found nothing to adopt).
    package func updateRejected(generation: Int, now: Int, storeChecked: Bool) -> UpdateRejectedAction {
        guard let current else { return .mint(issuedAt: now) }
        if current.generation > generation { return .retryWith(current) }
        if !storeChecked, lastStoreCheck.map({ now - $0 >= Self.storeCheckInterval || now < $0 }) ?? true {
            return .checkStore
        }
        let signableAt = current.issuedAt + policy.minimumRefreshInterval
        if now >= signableAt { return .mint(issuedAt: now) }
        return .wait(signableAt: signableAt)
    }

    /// After `TooManyProviderTokenUpdates`, the store was read at `now` and holds `stored`: the token to adopt
    /// (APNs may know it: it is another node's), or nil.
    package mutating func storeChecked(_ stored: StoredProviderToken?, now: Int) -> StoredProviderToken? {
        lastStoreCheck = now
        guard let stored, stored.jwt != current?.jwt, now - stored.issuedAt < 60 * 60 else { return nil }
        return stored
    }

    /// Whether `stored` may replace the current token: a different, unexpired token no older than ours.
    private func adoptable(_ stored: StoredProviderToken, now: Int, maxAge: Int) -> Bool {
        let age = now - stored.issuedAt
        guard age < maxAge, age > -60 else { return false }  // a minute of skew, as APNs allows
        guard let current else { return true }
        return stored.jwt != current.jwt && stored.issuedAt >= current.issuedAt
    }
}
