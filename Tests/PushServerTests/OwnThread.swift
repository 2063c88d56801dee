import Foundation
import TestSupport

/// Blocking client work on a thread of its own: the server under test answers on the concurrency pool, which a test
/// task blocked in a socket read would hold.
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// One request on a fresh connection to 127.0.0.1:`port`, made on its own thread (`onOwnThread`).
func rawRequest(
    _ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
    body: String = ""
) async throws -> RawHTTPResponse {
    try await onOwnThread {
        try RawHTTPClient.request(port: port, method, target, headers: headers, body: Array(body.utf8))
    }
}
