import COpenSSL

/// A table's row count and SHA-256 over its rows' canonical encoding (`PortableValue.encode`), rows in primary-key
/// order. Each backend reads its rows in that order (PostgreSQL compares text keys with `COLLATE "C"`, byte order,
/// as SQLite's BINARY does), so the same rows give the same digest on either backend.
///
/// Owns one OpenSSL digest context; not thread-safe, used by the one thread that reads the table.
package final class TableChecksum {
    private let context: OpaquePointer
    private var buffer: [UInt8] = []
    /// Rows added so far.
    package private(set) var rows: Int64 = 0

    package init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            // Only memory exhaustion makes this fail; nothing sensible can continue without a digest.
            preconditionFailure("OpenSSL could not start a SHA-256 digest")
        }
        self.context = context
        buffer.reserveCapacity(1 << 16)
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds one row (its values in the table's column order).
    package func add(_ row: [PortableValue]) {
        for value in row { value.encode(into: &buffer) }
        rows += 1
        if buffer.count >= 1 << 16 { flush() }
    }

    private func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { bytes in _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// The digest as 64 lowercase hex digits; the checksum takes no rows after this.
    package func finish() -> String {
        flush()
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &digest, &length)
        return digest.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }
}

@available(*, unavailable, message: "A checksum belongs to the thread reading its table")
extension TableChecksum: Sendable {}
