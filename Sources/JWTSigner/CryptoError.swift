import COpenSSL

/// A failed cryptographic operation: what was attempted, plus every message OpenSSL queued for it.
package struct CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The OpenSSL function or conversion step that failed, e.g. `EVP_DigestSign`.
    package let operation: String
    /// OpenSSL's error-queue entries (oldest first), or our own explanation when the failure is not OpenSSL's.
    package let messages: [String]

    package init(operation: String, messages: [String]) {
        self.operation = operation
        self.messages = messages
    }

    package var description: String {
        messages.isEmpty ? "\(operation) failed" : "\(operation) failed: \(messages.joined(separator: "; "))"
    }

    /// Builds the error from this thread's OpenSSL error queue and empties the queue, so a stale entry never
    /// surfaces in a later, unrelated failure.
    package static func drainingQueue(_ operation: String) -> CryptoError {
        CryptoError(operation: operation, messages: OpenSSLErrorQueue.drain())
    }
}

/// The thread-local OpenSSL error queue.
package enum OpenSSLErrorQueue {
    /// Removes every queued error and returns their texts, oldest first.
    package static func drain() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            messages.append(String(decoding: text, as: UTF8.self))
        }
        return messages
    }

    /// Discards queued errors after a failure whose details nobody needs (a signature that does not verify).
    package static func clear() {
        ERR_clear_error()
    }
}

/// The one gate for OpenSSL status codes: the EVP, BN and ECDSA calls used here return 1 on success.
/// `package`: the other OpenSSL users of this package (WebPush) check their calls through it too.
@discardableResult
package func check(_ status: Int32, _ operation: String) throws(CryptoError) -> Int32 {
    guard status == 1 else { throw CryptoError.drainingQueue(operation) }
    return status
}

/// The one gate for OpenSSL calls that return a handle: `NULL` means failure.
package func check<Handle>(_ handle: Handle?, _ operation: String) throws(CryptoError) -> Handle {
    guard let handle else { throw CryptoError.drainingQueue(operation) }
    return handle
}

/// The one gate for OpenSSL's `i2d_*` encoders: `encode` is called with a NULL output pointer, so OpenSSL
/// allocates the buffer (OPENSSL_malloc); the bytes are copied out and the buffer goes back through OPENSSL_free.
/// A length of 0 or less means failure.
package func derEncoded(_ operation: String, _ encode: (inout UnsafeMutablePointer<UInt8>?) -> Int32)
    throws(CryptoError) -> [UInt8]
{
    var output: UnsafeMutablePointer<UInt8>?
    let length = encode(&output)
    defer { if let output { copenssl_free(output) } }
    guard length > 0, let output else { throw CryptoError.drainingQueue(operation) }
    return Array(UnsafeBufferPointer(start: output, count: Int(length)))
}
