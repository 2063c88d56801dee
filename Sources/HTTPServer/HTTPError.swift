/// A concrete `HTTPResponseError`.
package struct HTTPError: HTTPResponseError, Hashable, Sendable {
    package var status: HTTPStatus
    package var title: String
    package var detail: String

    package var description: String { detail }

    /// An error with an explicit title (`"Bad request"`) and description.
    package init(_ status: HTTPStatus, title: String, detail: String) {
        self.status = status
        self.title = title
        self.detail = detail
    }

    /// An error titled with the status's usual wording (`400` → "Bad request").
    package init(_ status: HTTPStatus, detail: String) {
        self.init(status, title: HTTPError.defaultTitle(status), detail: detail)
    }

    /// "Bad request" style titles: the reason phrase with only the first letter capitalised.
    static func defaultTitle(_ status: HTTPStatus) -> String {
        if status.code == 500 { return "Something went wrong" }
        let phrase = status.reasonPhrase
        guard let first = phrase.first else { return "Error" }
        return String(first) + phrase.dropFirst().lowercased()
    }

    /// `400 {"error":"Bad request","description":detail}`.
    package static func badRequest(_ detail: String) -> HTTPError { HTTPError(.badRequest, detail: detail) }
    /// `404 {"error":"Not found","description":detail}`.
    package static func notFound(_ detail: String) -> HTTPError { HTTPError(.notFound, detail: detail) }
    /// `401 {"error":"Unauthorized","description":detail}`.
    package static func unauthorized(_ detail: String) -> HTTPError { HTTPError(.unauthorized, detail: detail) }
    static let internalError = HTTPError(
        .internalServerError, title: "Something went wrong",
        detail: "Internal server error")
}
