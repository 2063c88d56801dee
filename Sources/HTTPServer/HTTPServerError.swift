import Glibc

/// A failure to start or run the server, carrying the system's or OpenSSL's message.
package struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    /// The failed call (`bind`, `SSL_CTX_use_PrivateKey_file`, …).
    package let operation: String
    /// `errno` for system calls, 0 for OpenSSL.
    package let code: Int32
    package let message: String

    package var description: String { "\(operation): \(message)" }

    static func posix(_ operation: String, _ code: Int32 = errno) -> HTTPServerError {
        HTTPServerError(operation: operation, code: code, message: String(cString: strerror(code)))
    }

    static func invalid(_ operation: String, _ message: String) -> HTTPServerError {
        HTTPServerError(operation: operation, code: 0, message: message)
    }
}

/// One place for system-call results: retries EINTR, throws a typed error with `strerror` otherwise.
@discardableResult
func check(_ operation: String, _ call: () -> Int32) throws -> Int32 {
    while true {
        let result = call()
        if result >= 0 { return result }
        if errno == EINTR { continue }
        throw HTTPServerError.posix(operation)
    }
}
