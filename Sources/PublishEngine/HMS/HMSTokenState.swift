import JWTSigner
import PushStore

/// What the store holds for one HMS OAuth client: a token with its issue time and lifetime, or one node's claim
/// that it is fetching one.
///
/// HMS tokens live in the APNs provider-token rows (`ProviderTokenStorage`) under their own key namespace
/// (`teamID` "hms:<client ID>", which no APNs team ID can be: those are 10 letters and digits), so they share the
/// compare-and-swap every backend already has and need no table of their own. The `keyID` is a fingerprint of the
/// client secret: an instance configured with a wrong secret for the same client never adopts the token the right
/// secret obtained (it is refused, and `/ready` says so), and a rotated secret starts its own row. The `jwt` column holds
/// `token:<lifetime seconds>:<access token>` or `claim:<owner>`, its `issued_at` the token's issue time or the
/// claim's start (UNIX seconds).
package enum HMSSharedToken: Sendable, Equatable {
    case token(value: String, issuedAt: Int, lifetime: Int)
    case claim(owner: String, since: Int)

    /// The provider-token row key for one OAuth client and secret: `keyID` is `oauth-` and the first 8 bytes (hex) of
    /// HMAC-SHA256 of the secret under a fixed label, which tells secrets apart without storing anything that helps
    /// to guess one.
    static func key(clientID: String, clientSecret: String) -> (teamID: String, keyID: String) {
        let mac =
            (try? HS256.authenticationCode(Array(clientSecret.utf8), key: Array("push-server hms client secret".utf8)))
            ?? []
        return ("hms:\(clientID)", "oauth-" + mac.prefix(8).map { String(format: "%02x", $0) }.joined())
    }

    /// Parses a stored row; nil for a row this code did not write (then it is replaced like an expired token).
    init?(record: ProviderTokenRecord) {
        let text = record.jwt
        if text.hasPrefix("claim:") {
            self = .claim(owner: String(text.dropFirst(6)), since: Int(record.issuedAt))
            return
        }
        guard text.hasPrefix("token:") else { return nil }
        let rest = text.dropFirst(6)
        guard let colon = rest.firstIndex(of: ":"), let lifetime = Int(rest[..<colon]), lifetime > 0 else { return nil }
        let value = String(rest[rest.index(after: colon)...])
        guard !value.isEmpty else { return nil }
        self = .token(value: value, issuedAt: Int(record.issuedAt), lifetime: lifetime)
    }

    var record: ProviderTokenRecord {
        switch self {
        case .token(let value, let issuedAt, let lifetime):
            return ProviderTokenRecord(jwt: "token:\(lifetime):\(value)", issuedAt: Int64(issuedAt))
        case .claim(let owner, let since):
            return ProviderTokenRecord(jwt: "claim:\(owner)", issuedAt: Int64(since))
        }
    }
}

/// The pure core of the HMS OAuth token shared by all nodes: when to use the token at hand, when to look in the
/// store, whether to adopt the stored token, wait for another node's fetch, or claim the fetch. No clock, no
/// store, no network: every rule is tested by moving `now` (UNIX seconds: tokens are compared across nodes).
///
/// Huawei blocks an app that asks for more than 1,000 tokens in 5 minutes, so one token per OAuth client serves
/// every node and restart: a node adopts a stored token that is valid for longer than the refresh margin; when
/// none is, one node claims the fetch with a compare-and-swap and the others wait for its token. A claim lapses
/// after `claimSeconds`, so a node that died mid-fetch blocks nobody for long.
package struct HMSTokenState: Sendable {
    /// The token in use.
    struct Token: Sendable, Equatable {
        var value: String
        /// UNIX seconds.
        var issuedAt: Int
        /// Its `expires_in`.
        var lifetime: Int
        /// Increments with every token taken into use (fetched or adopted): a send that saw one rejected names it.
        var generation: Int

        /// When it is replaced: 5 minutes before it expires, or at half its life for a short-lived token.
        var refreshAt: Int { HMSTokenState.refreshAt(issuedAt: issuedAt, lifetime: lifetime) }
        var shared: HMSSharedToken { .token(value: value, issuedAt: issuedAt, lifetime: lifetime) }
    }

    /// What a caller wanting a token must do first.
    enum Need: Sendable, Equatable {
        case use(Token)
        /// A fetch failed a moment ago: answer its error without asking Huawei again.
        case fail(HMSTokenError)
        /// No usable token at hand: read the store and ask `next(stored:now:)`.
        case consultStore
    }

    /// What to do after reading the store.
    enum Step: Sendable, Equatable {
        /// The stored token is fresh (and not the rejected one): `adopt` it.
        case adopt(HMSSharedToken)
        /// Another node is fetching: read the store again shortly, no later than `until` (its claim's end).
        case wait(until: Int)
        /// Swap this claim in for the row that was read (compare-and-swap); the node whose swap wins fetches.
        case claim(HMSSharedToken)
    }

    /// Seconds another node's claim keeps this one from fetching.
    static let claimSeconds = 15

    static func refreshAt(issuedAt: Int, lifetime: Int) -> Int { issuedAt + lifetime - min(300, lifetime / 2) }

    /// Who this process is in claims (random per process).
    let owner: String
    /// Seconds a failed fetch is answered without asking again.
    let retryAfterFailure: Int
    private(set) var current: Token?
    /// The access token value a send saw rejected (never adopted again).
    private(set) var rejected: String?
    private(set) var lastFailure: (error: HMSTokenError, at: Int)?
    /// Tokens this process fetched from Huawei.
    private(set) var fetches = 0
    /// Stored tokens this process took over instead of fetching.
    private(set) var adoptions = 0
    private var generations = 0

    init(owner: String, retryAfterFailure: Int = 10) {
        self.owner = owner
        self.retryAfterFailure = retryAfterFailure
    }

    /// A send that saw the token of `generation` rejected calls this: that token is never used again.
    mutating func reject(generation: Int?) {
        guard let generation, let current, current.generation == generation else { return }
        rejected = current.value
        self.current = nil
    }

    func need(now: Int) -> Need {
        if let current, now < current.refreshAt { return .use(current) }
        if let failure = lastFailure, now - failure.at < retryAfterFailure, now >= failure.at {
            return .fail(failure.error)
        }
        return .consultStore
    }

    /// The store holds `stored` at `now`.
    func next(stored: HMSSharedToken?, now: Int) -> Step {
        switch stored {
        case .token(let value, let issuedAt, let lifetime)
        where now < Self.refreshAt(issuedAt: issuedAt, lifetime: lifetime) && value != rejected
            && issuedAt <= now + 60:  // a minute of clock skew between nodes
            return .adopt(stored!)
        case .claim(let owner, let since)
        where owner != self.owner && now < since + Self.claimSeconds && since <= now + 60:
            return .wait(until: since + Self.claimSeconds)
        default:
            return .claim(.claim(owner: owner, since: now))
        }
    }

    /// Takes a stored (or just fetched and stored) token into use.
    @discardableResult
    mutating func adopt(_ shared: HMSSharedToken, fetched: Bool = false) -> Token? {
        guard case .token(let value, let issuedAt, let lifetime) = shared else { return nil }
        if let current, current.value == value { return current }
        generations += 1
        if fetched { fetches += 1 } else { adoptions += 1 }
        let token = Token(value: value, issuedAt: issuedAt, lifetime: lifetime, generation: generations)
        current = token
        lastFailure = nil
        return token
    }

    /// Records a fetch that failed at `now`.
    mutating func failed(_ error: HMSTokenError, now: Int) {
        fetches += 1
        current = nil
        lastFailure = (error, now)
    }
}
