/// How the body of a request is delimited (RFC 9112 §6.3).
public enum BodyFraming: Hashable, Sendable {
    case none
    case contentLength(Int)
    case chunked
}

/// The parsed request line and header section of one request.
public struct RequestHead: Sendable {
    public var method: HTTPMethod
    /// The request target exactly as sent (`/a%2Fb?x=1`).
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    public var headers: HTTPHeaders
    public var framing: BodyFraming
    /// Whether the connection may carry another request after this one (1.1 default; 1.0 only when asked).
    public var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body.
    package var expectsContinue: Bool
}
