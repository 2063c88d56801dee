import Foundation

/// Where a command writes bulk output: standard output (`-`) or a new file created `0600` (device exports hold
/// tokens). Unlike `Console`, a failed write throws: an export cut short by a full disk or a closed pipe must fail.
final class OutputFile: Sendable {
    let descriptor: Int32
    private let owned: Bool

    /// - Throws: `OutputFileError` when the file cannot be created.
    init(path: String) throws {
        if path == "-" {
            descriptor = 1
            owned = false
        } else {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw OutputFileError(message: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            descriptor = fd
            owned = true
        }
    }

    /// Writes all of `bytes`, retrying partial writes and EINTR. - Throws: `OutputFileError` on any other failure.
    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    throw OutputFileError(message: "write failed: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    /// Flushes a file to disk and closes it. - Throws: `OutputFileError` when that fails.
    func close() throws {
        guard owned else { return }
        defer { Glibc.close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw OutputFileError(message: "fsync failed: \(String(cString: strerror(errno)))")
        }
    }
}

/// A bulk output write that failed.
struct OutputFileError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
