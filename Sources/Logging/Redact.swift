/// Masking for values that must never appear whole in logs.
package enum Redact {
    /// Masks a device token, keeping enough to correlate lines: `a1b2…e9f0 (64)`.
    /// Tokens shorter than 12 characters are fully masked.
    package static func token(_ token: String) -> String {
        let count = token.count
        guard count >= 12 else { return "…(\(count))" }
        return "\(token.prefix(4))…\(token.suffix(4)) (\(count))"
    }

    /// Secrets (keys, bearer tokens, JWTs) are never logged, not even in part.
    package static func secret(_ secret: String) -> String { "[redacted]" }
}
