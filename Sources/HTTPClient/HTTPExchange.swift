/// One outbound HTTP POST whose answer matters (status, `Retry-After` and body): an FCM `messages:send`, an OAuth2
/// token request, a Web Push message. Sent by an `HTTPExchangeClient`.
package struct HTTPExchange: Sendable, Equatable {
    /// Where to POST; the client's `DestinationPolicy` (if any) judges the address it resolves to.
    package var url: HTTPURL
    /// `Name: value` lines, in order. A line holding CR, LF or NUL fails the exchange before anything is sent.
    package var headers: [String]
    package var body: [UInt8]
    /// `POST` (the default, with `body`), `GET` or `DELETE` (APNs channel management; `body` must be empty).
    package var method: HTTPExchangeMethod = .post
    /// Response headers to keep (lower-case names, e.g. `apns-channel-id`); they come back in
    /// `HTTPExchangeResponse.headers`. At most 8 names; values are cut at 256 bytes.
    package var responseHeaders: [String] = []

    package init(url: HTTPURL, headers: [String], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The methods an `HTTPExchange` may use.
package enum HTTPExchangeMethod: String, Sendable, Equatable {
    case post = "POST"
    case get = "GET"
    case delete = "DELETE"
}

/// The answer to an `HTTPExchange`.
package struct HTTPExchangeResponse: Sendable, Equatable {
    /// The final response's status.
    package var status: Int
    /// The `Retry-After` header, if the answer had one (trimmed).
    package var retryAfter: String?
    /// The body, at most the client's `maxResponseBytes`.
    package var body: [UInt8]
    /// The headers the exchange asked for (`HTTPExchange.responseHeaders`) that the final response carried, by
    /// lower-case name; printable ASCII only.
    package var headers: [String: String] = [:]

    package init(status: Int, retryAfter: String? = nil, body: [UInt8] = [], headers: [String: String] = [:]) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
        self.headers = headers
    }
}

/// What an `HTTPExchange` ended with: an answer, or why none arrived (`HTTPExchangeError`, the one error type for
/// outbound POSTs: refused destination, timeout, connection, shutdown, …).
package typealias HTTPExchangeResult = Result<HTTPExchangeResponse, HTTPExchangeError>
