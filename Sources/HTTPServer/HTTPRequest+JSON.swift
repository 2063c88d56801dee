import Foundation

extension HTTPRequest {
    /// Decodes the body as JSON.
    /// - Parameters:
    ///   - error: thrown when the body is not valid JSON for `T` (the decoder's message stays out of the
    ///     response; handlers that want field-level messages decode themselves).
    /// - Throws: `error`, which renders as its status with a JSON body.
    public func decodeJSON<T: Decodable>(
        _ type: T.Type, decoder: JSONDecoder = JSONDecoder(),
        error invalidBody: HTTPError = .badRequest("Request body is not valid JSON")
    ) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch {
            throw invalidBody
        }
    }
}
