import Foundation

/// Writes command output. Standard output for results, standard error for diagnostics, each one `write(2)`.
public enum Console {
    public static func out(_ text: String) { write(1, text.hasSuffix("\n") ? text : text + "\n") }
    public static func err(_ text: String) { write(2, text.hasSuffix("\n") ? text : text + "\n") }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
