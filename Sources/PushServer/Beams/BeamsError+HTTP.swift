import BeamsModel
import HTTPServer

/// Beams errors render through the HTTP server's error protocol as `{"error","description"}`.
extension BeamsError: HTTPResponseError {
    package var status: HTTPStatus { HTTPStatus(statusCode) }
    public var description: String { detail }
    package var responseHeaders: HTTPHeaders {
        guard let retryAfter else { return HTTPHeaders() }
        return ["Retry-After": String(retryAfter)]
    }
}

extension BodyLimit {
    /// A body limit answered with Beams' `400 Request body size is too large (max NKiB)`. Every Beams route uses
    /// 400, never 413: the iOS SDK retries any status but 400/401/403/404 forever.
    static func beams(maxKiB: Int) -> BodyLimit {
        let error = BeamsError.bodyTooLarge(maxKiB: maxKiB)
        return BodyLimit(
            maxBytes: maxKiB * 1024, error: HTTPError(.badRequest, title: error.title, detail: error.detail))
    }

    /// For routes that take no body: any body byte is a 400.
    static let noBody = BodyLimit(
        maxBytes: 0,
        error: HTTPError(
            .badRequest, title: BeamsError.unexpectedBody.title, detail: BeamsError.unexpectedBody.detail))
}
