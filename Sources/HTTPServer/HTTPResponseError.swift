import JSON

/// An error whose content is safe to show the client. Thrown from a handler, it renders as
/// `status` with the JSON body `{"error":"<title>","description":"<description>"}`.
///
/// Errors not conforming to this protocol become `500 {"error":"Something went wrong",
/// "description":"Internal server error"}`; their details are only logged.
package protocol HTTPResponseError: Error {
    var status: HTTPStatus { get }
    /// A short title (`"Bad request"`).
    var title: String { get }
    /// A human-readable explanation for the client.
    var description: String { get }
    /// Extra response header fields, e.g. `Retry-After` on a 429. None by default.
    var responseHeaders: HTTPHeaders { get }
}

extension HTTPResponseError {
    package var responseHeaders: HTTPHeaders { HTTPHeaders() }
}

extension HTTPResponse {
    /// The JSON rendering of any `HTTPResponseError`, with its extra header fields.
    package init(error: any HTTPResponseError) {
        // Written in Beams' member order, `error` first, rather than sorted.
        self = HTTPResponse.json(
            status: error.status,
            raw: JSONWriter.object([
                ("error", .string(error.title)), ("description", .string(error.description)),
            ]))
        for field in error.responseHeaders { headers.add(field.name, field.value) }
    }
}
