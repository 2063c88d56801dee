/// A complete request as handed to a route handler.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target exactly as received (`/a%2Fb?x=1`).
    public var rawTarget: String
    /// The path part of the target, still percent-encoded (`/a%2Fb`).
    public var path: String
    /// Route parameters, percent-decoded (`:instance` → `parameters["instance"]`).
    public var parameters: [String: String]
    /// Query items in order, percent-decoded with `+` as space.
    public var query: [(name: String, value: String)]
    public var headers: HTTPHeaders
    /// Trailer fields of a chunked body (usually empty).
    public var trailers: HTTPHeaders
    public var body: [UInt8]
    /// `ip:port` of the client.
    public var peer: String
    /// The IP address of the accepted socket's peer, without the port (`192.0.2.7`, `2001:db8::1`). Behind a
    /// reverse proxy this is the proxy's address for every client; the application decides whether to trust a
    /// forwarding header.
    public var clientAddress: String
    /// The pattern of the route that matched (`/v1/items/:id`), for logs and metrics.
    public var routePattern: String
    /// The incoming `X-Request-ID` when it is sane, else a generated one; echoed in the response.
    public var requestID: String
    /// Whether the request arrived over TLS.
    public var isTLS: Bool
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int

    /// Builds a request; the server does this, tests of handlers may too.
    public init(
        method: HTTPMethod, rawTarget: String, path: String, parameters: [String: String] = [:],
        query: [(name: String, value: String)] = [], headers: HTTPHeaders = HTTPHeaders(),
        trailers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], peer: String = "",
        clientAddress: String = "", routePattern: String = "", requestID: String = "", isTLS: Bool = false,
        minorVersion: Int = 1
    ) {
        self.method = method
        self.rawTarget = rawTarget
        self.path = path
        self.parameters = parameters
        self.query = query
        self.headers = headers
        self.trailers = trailers
        self.body = body
        self.peer = peer
        self.clientAddress = clientAddress
        self.routePattern = routePattern
        self.requestID = requestID
        self.isTLS = isTLS
        self.minorVersion = minorVersion
    }

    /// The first value of query item `name`.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Every value of query item `name` (`?a=1&a=2`).
    public func queryValues(_ name: String) -> [String] { query.filter { $0.name == name }.map(\.value) }
}
