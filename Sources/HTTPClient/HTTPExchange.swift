/// One outbound HTTP POST whose answer matters (status, `Retry-After` and body): an FCM `messages:send`, an OAuth2
/// token request, a Web Push message. Sent by an `HTTPExchangeClient`.
public struct HTTPExchange: Sendable, Equatable {
    /// Where to POST; the client's `DestinationPolicy` (if any) judges the address it resolves to.
    public var url: HTTPURL
    /// `Name: value` lines, in order. A line holding CR, LF or NUL fails the exchange before anything is sent.
    public var headers: [String]
    public var body: [UInt8]
    /// `POST` (the default, with `body`), `GET` or `DELETE` (APNs channel management; `body` must be empty).
    public var method: HTTPExchangeMethod = .post
    /// Response headers to keep (lower-case names, e.g. `apns-channel-id`); they come back in
    /// `HTTPExchangeResponse.headers`. At most 8 names; values are cut at 256 bytes.
    public var responseHeaders: [String] = []

    public init(url: HTTPURL, headers: [String], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The methods an `HTTPExchange` may use.
public enum HTTPExchangeMethod: String, Sendable, Equatable {
    case post = "POST"
    case get = "GET"
    case delete = "DELETE"
}

/// The answer to an `HTTPExchange`.
public struct HTTPExchangeResponse: Sendable, Equatable {
    /// The final response's status.
    public var status: Int
    /// The `Retry-After` header, if the answer had one (trimmed).
    public var retryAfter: String?
    /// The body, at most the client's `maxResponseBytes`.
    public var body: [UInt8]
    /// The headers the exchange asked for (`HTTPExchange.responseHeaders`) that the final response carried, by
    /// lower-case name; printable ASCII only.
    public var headers: [String: String] = [:]

    public init(status: Int, retryAfter: String? = nil, body: [UInt8] = [], headers: [String: String] = [:]) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
        self.headers = headers
    }
}

/// What an `HTTPExchange` ended with: an answer, or why none arrived (`HTTPExchangeError`, the one error type for
/// outbound POSTs: refused destination, timeout, connection, shutdown, …).
public typealias HTTPExchangeResult = Result<HTTPExchangeResponse, HTTPExchangeError>
