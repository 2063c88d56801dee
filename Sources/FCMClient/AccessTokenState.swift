/// When to refresh the FCM access token and how to back off after failures.
package struct AccessTokenPolicy: Sendable, Hashable {
    /// Refresh this many seconds before expiry. Default 225 s (3 min 45 s, google-auth-library-python's
    /// `REFRESH_THRESHOLD`), so requests keep using the old token while one caller fetches the next.
    package var refreshAhead: Double
    /// A token this close to expiry (seconds) is no longer handed out at all: a request must reach FCM before
    /// the token runs out. Default 30 s.
    package var expiryMargin: Double
    /// Delay before retrying after the first failed refresh; doubles per consecutive failure. Default 1 s.
    package var initialBackoff: Double
    /// Largest delay between refresh attempts. Default 300 s.
    package var maxBackoff: Double
    /// Smallest delay after the token endpoint refused the account (a configuration error that needs an
    /// operator, so hammering Google helps nobody). Default 60 s.
    package var configurationBackoff: Double

    package init(
        refreshAhead: Double = 225, expiryMargin: Double = 30, initialBackoff: Double = 1, maxBackoff: Double = 300,
        configurationBackoff: Double = 60
    ) {
        precondition(refreshAhead >= expiryMargin && expiryMargin >= 0, "refresh ahead of the expiry margin")
        precondition(initialBackoff > 0 && maxBackoff >= initialBackoff && configurationBackoff >= 0, "sane backoff")
        self.refreshAhead = refreshAhead
        self.expiryMargin = expiryMargin
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.configurationBackoff = configurationBackoff
    }
}

/// The pure core of FCM access-token management, modelled on `ProviderTokenState` in `Sources/APNsClient`: which
/// token to send, when to fetch a new one, who fetches it (exactly one caller at a time) and how long to back off
/// after failures. No clock, no network, no locks: the owner holds it under its lock, passes `now` (seconds on
/// a monotonic clock) and performs the fetch the state asks for, so every rule is tested by moving `now`.
package struct AccessTokenState: Sendable, Equatable {
    /// A token in use.
    package struct Token: Sendable, Equatable {
        /// The bearer value.
        package var value: String
        /// When it expires, on the owner's monotonic clock (seconds).
        package var expiresAt: Double
        /// When it was installed, on the same clock (its age for `/metrics`).
        package var obtainedAt: Double
        /// Increments with every token taken into use, so a `401` can be tied to the token it was sent with.
        package var generation: Int
    }

    /// What a caller that needs a token must do.
    package enum Action: Sendable, Equatable {
        /// Send with this token.
        case use(Token)
        /// Send with this token, and fetch the next one (this caller is the one fetcher; report the outcome with
        /// `refreshSucceeded` or `refreshFailed`). The token is still valid for at least `expiryMargin`.
        case useAndRefresh(Token)
        /// No usable token: fetch one (this caller is the one fetcher), then ask again.
        case refresh
        /// No usable token and another caller is fetching one: wait until it reports, then ask again.
        case wait
        /// No usable token and the last fetch failed: nothing to send with before `retryAt`.
        case unavailable(AccessTokenError, retryAt: Double)
    }

    /// The authentication problem `/ready` reports, if any.
    package enum AuthProblem: Sendable, Equatable {
        /// The token endpoint refused the account (a configuration error), since `since`.
        case refused(AccessTokenError, since: Double)
        /// FCM answered `401` to consecutive freshly fetched tokens: the account may lack the FCM role or the
        /// API is disabled.
        case rejectedByFCM(count: Int)
    }

    package let policy: AccessTokenPolicy
    /// The token in use, even one near expiry.
    package private(set) var current: Token?
    /// Whether a caller is fetching a token right now.
    package private(set) var refreshing = false
    /// Consecutive failed fetches.
    package private(set) var failures = 0
    /// The last fetch failure, cleared by a success.
    package private(set) var lastFailure: AccessTokenError?
    /// No fetch before this time after a failure.
    package private(set) var nextAttempt: Double?
    /// When the current run of configuration refusals began.
    private var refusedSince: Double?
    /// Consecutive tokens FCM answered `401` to.
    package private(set) var consecutiveRejections = 0
    /// How many tokens were fetched successfully.
    package private(set) var fetchCount = 0
    private var generations = 0

    package init(policy: AccessTokenPolicy = AccessTokenPolicy()) {
        self.policy = policy
    }

    /// The token to send at `now`, or what to do to get one. Mutating: a `.refresh` or `.useAndRefresh` answer
    /// makes this caller the one fetcher until it reports back.
    package mutating func acquire(now: Double) -> Action {
        let inBackoff = nextAttempt.map { now < $0 } ?? false
        if let token = current, now < token.expiresAt - policy.expiryMargin {
            if refreshing || inBackoff || now < token.expiresAt - policy.refreshAhead { return .use(token) }
            refreshing = true
            return .useAndRefresh(token)
        }
        if refreshing { return .wait }
        if inBackoff, let lastFailure, let nextAttempt { return .unavailable(lastFailure, retryAt: nextAttempt) }
        refreshing = true
        return .refresh
    }

    /// The fetcher got `token` at `now`: it becomes the current token, failures and refusals are forgotten.
    @discardableResult
    package mutating func refreshSucceeded(_ token: AccessToken, now: Double) -> Token {
        refreshing = false
        failures = 0
        lastFailure = nil
        nextAttempt = nil
        refusedSince = nil
        fetchCount += 1
        generations += 1
        let installed = Token(
            value: token.value, expiresAt: now + Double(token.expiresIn), obtainedAt: now,
            generation: generations)
        current = installed
        return installed
    }

    /// The fetcher failed at `now`: back off exponentially (at least `configurationBackoff` after a refusal).
    package mutating func refreshFailed(_ error: AccessTokenError, now: Double) {
        refreshing = false
        failures += 1
        lastFailure = error
        var delay = policy.initialBackoff
        for _ in 1..<min(failures, 32) where delay < policy.maxBackoff { delay *= 2 }
        delay = min(delay, policy.maxBackoff)
        if error.isConfigurationError {
            delay = max(delay, policy.configurationBackoff)
            if refusedSince == nil { refusedSince = now }
        } else {
            refusedSince = nil
        }
        nextAttempt = now + delay
    }

    /// FCM answered `401 UNAUTHENTICATED` to a request sent with token `generation`: drop that token (unless a
    /// newer one is already in use) and say how to get another. The caller re-sends that message once.
    package mutating func rejected(generation: Int, now: Double) -> Action {
        if let current, current.generation > generation { return acquire(now: now) }
        if let current, current.generation == generation {
            consecutiveRejections += 1
            self.current = nil
            // The token was taken from FCM's hands: fetch at once, even inside a backoff window.
            nextAttempt = nil
        }
        return acquire(now: now)
    }

    /// FCM accepted a request sent with token `generation`: it authenticates, so earlier rejections are over.
    package mutating func accepted(generation: Int) {
        if current?.generation == generation { consecutiveRejections = 0 }
    }

    /// The problem to report in `/ready`: a refused account, or FCM rejecting two tokens in a row.
    package var authProblem: AuthProblem? {
        if let refusedSince, let lastFailure, lastFailure.isConfigurationError {
            return .refused(lastFailure, since: refusedSince)
        }
        if consecutiveRejections >= 2 { return .rejectedByFCM(count: consecutiveRejections) }
        return nil
    }
}
