/// One outbound HTTP POST whose answer matters (status, `Retry-After` and body): an FCM `messages:send`, an OAuth2
/// token request, a Web Push message. Sent by an `HTTPExchangeClient`.
public struct HTTPExchange: Sendable, Equatable {
    /// Where to POST; the client's `DestinationPolicy` (if any) judges the address it resolves to.
    public var url: HTTPURL
    /// `Name: value` lines, in order. A line holding CR, LF or NUL fails the exchange before anything is sent.
    public var headers: [String]
    public var body: [UInt8]

    public init(url: HTTPURL, headers: [String], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The answer to an `HTTPExchange`.
public struct HTTPExchangeResponse: Sendable, Equatable {
    /// The final response's status.
    public var status: Int
    /// The `Retry-After` header, if the answer had one (trimmed).
    public var retryAfter: String?
    /// The body, at most the client's `maxResponseBytes`.
    public var body: [UInt8]

    public init(status: Int, retryAfter: String? = nil, body: [UInt8] = []) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
    }
}

/// What an `HTTPExchange` ended with: an answer, or why none arrived (`HTTPPostError`, the one error type for
/// outbound POSTs: refused destination, timeout, connection, shutdown, …).
public typealias HTTPExchangeResult = Result<HTTPExchangeResponse, HTTPPostError>
