/// An HTTP response status code with its reason phrase.
package struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    package let code: Int
    package let reasonPhrase: String

    /// A status with the standard reason phrase for `code` (or `"Status"` for unknown codes).
    package init(_ code: Int) {
        self.code = code
        self.reasonPhrase = HTTPStatus.standardPhrase(code)
    }

    /// A status with a custom reason phrase.
    package init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    package var description: String { "\(code) \(reasonPhrase)" }

    // Named statuses (RFC 9110 §15).
    package static let `continue` = HTTPStatus(100)
    package static let ok = HTTPStatus(200)
    package static let created = HTTPStatus(201)
    package static let accepted = HTTPStatus(202)
    package static let noContent = HTTPStatus(204)
    package static let badRequest = HTTPStatus(400)
    package static let unauthorized = HTTPStatus(401)
    package static let forbidden = HTTPStatus(403)
    package static let notFound = HTTPStatus(404)
    package static let methodNotAllowed = HTTPStatus(405)
    package static let requestTimeout = HTTPStatus(408)
    package static let payloadTooLarge = HTTPStatus(413)
    package static let uriTooLong = HTTPStatus(414)
    package static let expectationFailed = HTTPStatus(417)
    package static let unprocessableEntity = HTTPStatus(422)
    package static let tooManyRequests = HTTPStatus(429)
    package static let requestHeaderFieldsTooLarge = HTTPStatus(431)
    package static let internalServerError = HTTPStatus(500)
    package static let notImplemented = HTTPStatus(501)
    package static let serviceUnavailable = HTTPStatus(503)
    package static let httpVersionNotSupported = HTTPStatus(505)

    static func standardPhrase(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }
}
