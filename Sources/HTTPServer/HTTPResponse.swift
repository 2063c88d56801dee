import JSON

/// A complete response: status, headers and body. `Date`, `Content-Length` and `Connection` are added by the
/// server when the response is written; do not set them here.
package struct HTTPResponse: Sendable {
    package var status: HTTPStatus
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// A body produced while it is sent (`body` is ignored then): sent with `Transfer-Encoding: chunked` (to an
    /// HTTP/1.0 client: until the connection closes). A HEAD request's stream is closed unread.
    package var stream: HTTPBodyStream?

    /// A response; `Content-Type` is up to the caller (the helpers below set it).
    package init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body `stream` produces while it is sent.
    package static func streamed(status: HTTPStatus = .ok, headers: HTTPHeaders, _ stream: HTTPBodyStream)
        -> HTTPResponse
    {
        var response = HTTPResponse(status: status, headers: headers)
        response.stream = stream
        return response
    }

    /// A response with no body.
    package static func empty(status: HTTPStatus = .noContent) -> HTTPResponse { HTTPResponse(status: status) }

    /// A `text/plain; charset=utf-8` response.
    package static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// An `application/json` response from already encoded bytes.
    package static func json(status: HTTPStatus = .ok, raw: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: raw)
    }

    /// An `application/json` response with `value` serialized compactly (sorted keys).
    package static func json(_ value: JSONValue, status: HTTPStatus = .ok) -> HTTPResponse {
        json(status: status, raw: value.serialized())
    }
}
