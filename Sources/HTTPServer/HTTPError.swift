/// A concrete `HTTPResponseError`.
public struct HTTPError: HTTPResponseError, Hashable, Sendable {
    public var status: HTTPStatus
    public var title: String
    public var detail: String

    public var description: String { detail }

    /// An error with an explicit title (`"Bad request"`) and description.
    public init(_ status: HTTPStatus, title: String, detail: String) {
        self.status = status
        self.title = title
        self.detail = detail
    }

    /// An error titled with the status's usual wording (`400` → "Bad request").
    public init(_ status: HTTPStatus, detail: String) {
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
    public static func badRequest(_ detail: String) -> HTTPError { HTTPError(.badRequest, detail: detail) }
    /// `404 {"error":"Not found","description":detail}`.
    public static func notFound(_ detail: String) -> HTTPError { HTTPError(.notFound, detail: detail) }
    /// `401 {"error":"Unauthorized","description":detail}`.
    public static func unauthorized(_ detail: String) -> HTTPError { HTTPError(.unauthorized, detail: detail) }
    static let internalError = HTTPError(
        .internalServerError, title: "Something went wrong",
        detail: "Internal server error")
}
