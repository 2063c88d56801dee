/// Why the parser rejected a request: the status to answer with and a short, static description that is safe to
/// show the client (it never echoes request bytes).
///
/// Every parse error is fatal to the connection: the server answers with `Connection: close` and closes, because
/// after a framing error it cannot know where the next request would start (RFC 9112 §11.2).
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    package let status: HTTPStatus
    package let reason: String
    /// The body exceeds the limit in force; routes may replace the response (see `BodyLimit`).
    package let isBodyTooLarge: Bool

    init(_ status: HTTPStatus, _ reason: String, isBodyTooLarge: Bool = false) {
        self.status = status
        self.reason = reason
        self.isBodyTooLarge = isBodyTooLarge
    }

    public var description: String { "\(status.code) \(reason)" }

    static func bad(_ reason: String) -> HTTPParseError { HTTPParseError(.badRequest, reason) }
    static let bodyTooLarge = HTTPParseError(.payloadTooLarge, "Request body is too large", isBodyTooLarge: true)
    static let requestLineTooLong = HTTPParseError(.uriTooLong, "Request line is too long")
    static let headersTooLarge = HTTPParseError(.requestHeaderFieldsTooLarge, "Request header fields are too large")
    static let tooManyHeaders = HTTPParseError(.requestHeaderFieldsTooLarge, "Too many request header fields")
    static let versionNotSupported = HTTPParseError(.httpVersionNotSupported, "HTTP version not supported")
    static let unsupportedTransferCoding = HTTPParseError(.notImplemented, "Transfer coding not implemented")
    static let expectationFailed = HTTPParseError(.expectationFailed, "Unsupported expectation")
}
