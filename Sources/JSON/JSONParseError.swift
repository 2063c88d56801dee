/// Why a JSON text was rejected, and where.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset in the input where the problem was found.
    public let offset: Int
    /// What is wrong, e.g. `duplicate key "sub"`.
    public let reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
