/// Why a JSON text was rejected, and where.
package struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset in the input where the problem was found.
    package let offset: Int
    /// What is wrong, e.g. `duplicate key "sub"`.
    package let reason: String
    /// Which rule the text broke, for callers that answer a broken bound differently from bad syntax.
    package let kind: Kind

    /// The rule a rejected text broke.
    package enum Kind: Sendable, Equatable {
        /// Not RFC 8259 JSON, or outside the parser's strictness rules (duplicate keys, bad UTF-8, …).
        case syntax
        /// Longer than `JSONLimits.maxBytes` or nested deeper than `JSONLimits.maxDepth`.
        case tooLarge
        /// An array with more than `JSONLimits.maxArrayCount` elements.
        case arrayTooLong
    }

    package init(offset: Int, reason: String, kind: Kind = .syntax) {
        self.offset = offset
        self.reason = reason
        self.kind = kind
    }

    package var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
