import JSON

extension HTTPRequest {
    /// The body parsed as one JSON text (see `JSONValue.init(parsing:)` for the rules).
    /// - Parameters:
    ///   - invalidBody: thrown when the body is not valid JSON (the parser's message stays out of the response;
    ///     handlers that want field-level messages check the value themselves).
    /// - Throws: `invalidBody`, which renders as its status with a JSON body.
    package func jsonBody(
        orThrow invalidBody: HTTPError = .badRequest("Request body is not valid JSON")
    ) throws(HTTPError) -> JSONValue {
        guard let value = JSONValue.parse(body) else { throw invalidBody }
        return value
    }
}
