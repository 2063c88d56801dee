/// An error whose content is safe to show the client. Thrown from a handler, it renders as
/// `status` with the JSON body `{"error":"<title>","description":"<description>"}`.
///
/// Errors not conforming to this protocol become `500 {"error":"Something went wrong",
/// "description":"Internal server error"}`; their details are only logged.
public protocol HTTPResponseError: Error {
    var status: HTTPStatus { get }
    /// A short title (`"Bad request"`).
    var title: String { get }
    /// A human-readable explanation for the client.
    var description: String { get }
}

/// A concrete `HTTPResponseError`.
public struct HTTPError: HTTPResponseError, Hashable, Sendable {
    public var status: HTTPStatus
    public var title: String
    public var detail: String

    public var description: String { detail }

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

    public static func badRequest(_ detail: String) -> HTTPError { HTTPError(.badRequest, detail: detail) }
    public static func notFound(_ detail: String) -> HTTPError { HTTPError(.notFound, detail: detail) }
    public static func unauthorized(_ detail: String) -> HTTPError { HTTPError(.unauthorized, detail: detail) }
    static let internalError = HTTPError(.internalServerError, title: "Something went wrong",
                                         detail: "Internal server error")
}

extension HTTPResponse {
    /// The JSON rendering of any `HTTPResponseError`.
    public init(error: any HTTPResponseError) {
        self = HTTPResponse.json(status: error.status,
                                 raw: JSONText.object([("error", error.title), ("description", error.description)]))
    }
}

/// Minimal JSON string escaping for the error bodies we build by hand (no Foundation encoder on the loop).
enum JSONText {
    static func object(_ pairs: [(String, String)]) -> [UInt8] {
        var out = "{"
        for (i, (k, v)) in pairs.enumerated() {
            if i > 0 { out += "," }
            out += quote(k) + ":" + quote(v)
        }
        out += "}"
        return Array(out.utf8)
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
