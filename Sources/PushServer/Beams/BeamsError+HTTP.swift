import HTTPServer

/// Beams errors render through the HTTP server's error protocol as `{"error","description"}`.
extension BeamsError: HTTPResponseError {
    public var status: HTTPStatus { HTTPStatus(statusCode) }
    public var description: String { detail }
}
