import COpenSSL

/// The one Swift owner of an OpenSSL object: frees it exactly once, in `deinit`.
///
/// Not Sendable: each loader keeps its handles on the stack of one call; only plain values leave it. Swift may end
/// an object's life right after its last use, so code passes the handle (not `pointer`) to the function that calls
/// OpenSSL with it, or wraps the call in `withExtendedLifetime`.
final class OpenSSLHandle {
    let pointer: OpaquePointer
    private let free: (OpaquePointer) -> Void

    init(_ pointer: OpaquePointer, free: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.free = free
    }

    deinit {
        free(pointer)
    }

    /// Takes ownership of an `X509*`.
    static func certificate(_ pointer: OpaquePointer) -> OpenSSLHandle { OpenSSLHandle(pointer) { X509_free($0) } }
    /// Takes ownership of an `EVP_PKEY*`.
    static func key(_ pointer: OpaquePointer) -> OpenSSLHandle { OpenSSLHandle(pointer) { EVP_PKEY_free($0) } }
}
