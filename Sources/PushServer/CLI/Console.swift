import Logging

/// Writes command output. Standard output for results, standard error for diagnostics, each one `write(2)`.
package enum Console {
    package static func out(_ text: String) { FileDescriptor.writeAll(1, text.hasSuffix("\n") ? text : text + "\n") }
    package static func err(_ text: String) { FileDescriptor.writeAll(2, text.hasSuffix("\n") ? text : text + "\n") }
}
