import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange. The client's only contact with the network, so tests can count or script requests.
public protocol HTTPTransport: Sendable {
    /// - Returns: the status and body of the answer.
    /// - Throws: when no answer arrived (the client retries those).
    func send(method: String, url: URL, headers: [String: String], body: Data?) async throws -> (status: Int, body: Data)
}

/// `URLSession`, with an ephemeral configuration like the Beams SDK (no cookies, no cache).
public struct URLSessionTransport: HTTPTransport {
    private let session: URLSession

    public init(session: URLSession = URLSession(configuration: .ephemeral)) {
        self.session = session
    }

    public func send(method: String, url: URL, headers: [String: String], body: Data?) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        // A continuation around dataTask works on every platform this package builds for, including Linux.
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: (http.statusCode, data ?? Data()))
                } else {
                    continuation.resume(throwing: URLError(.badServerResponse))
                }
            }.resume()
        }
    }
}
