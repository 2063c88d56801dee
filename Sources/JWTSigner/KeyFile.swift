#if canImport(Glibc)
    import Glibc
#endif

/// Reads small credential files (PEM keys, service-account JSON) with a size bound and the system's own reason
/// on failure (`No such file or directory`, `Permission denied`), which Foundation's wording hides.
package enum KeyFile {
    /// The whole file.
    ///
    /// - Parameters:
    ///   - maxSize: larger files are refused: a credential is a few KB, anything bigger is the wrong file.
    ///   - kind: what the file should be, for the size error ("larger than 65536 bytes, not a PEM key").
    /// - Throws: `KeyLoadError.unreadableFile` with the path and the reason.
    package static func read(_ path: String, maxSize: Int, kind: String) throws(KeyLoadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw .unreadableFile(path: path, reason: errnoText(errno)) }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: errnoText(errno))
            }
            if count == 0 { break }
            contents += chunk[0..<count]
            if contents.count > maxSize {
                throw .unreadableFile(path: path, reason: "larger than \(maxSize) bytes, not \(kind)")
            }
        }
        return contents
    }

    private static func errnoText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}
