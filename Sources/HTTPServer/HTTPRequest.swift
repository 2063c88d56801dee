/// A complete request as handed to a route handler.
package struct HTTPRequest: Sendable {
    package var method: HTTPMethod
    /// The request target exactly as received (`/a%2Fb?x=1`).
    package var rawTarget: String
    /// The path part of the target, still percent-encoded (`/a%2Fb`).
    package var path: String
    /// Route parameters, percent-decoded (`:instance` → `parameters["instance"]`).
    package var parameters: [String: String]
    /// Query items in order, percent-decoded with `+` as space.
    package var query: [(name: String, value: String)]
    package var headers: HTTPHeaders
    /// Trailer fields of a chunked body (usually empty).
    package var trailers: HTTPHeaders
    package var body: [UInt8]
    /// `ip:port` of the client.
    package var peer: String
    /// The IP address of the accepted socket's peer, without the port (`192.0.2.7`, `2001:db8::1`). Behind a
    /// reverse proxy this is the proxy's address for every client; the application decides whether to trust a
    /// forwarding header.
    package var clientAddress: String
    /// The pattern of the route that matched (`/v1/items/:id`), for logs and metrics.
    package var routePattern: String
    /// The incoming `X-Request-ID` when it is sane, else a generated one; echoed in the response.
    package var requestID: String
    /// Whether the request arrived over TLS.
    package var isTLS: Bool
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int

    /// Builds a request; the server does this, tests of handlers may too.
    package init(
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
    package func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Every value of query item `name` (`?a=1&a=2`).
    package func queryValues(_ name: String) -> [String] { query.filter { $0.name == name }.map(\.value) }
}
