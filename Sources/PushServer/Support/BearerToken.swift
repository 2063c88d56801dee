import Foundation

/// The credential of an `Authorization: Bearer <credential>` header (the scheme in any case, surrounding spaces
/// ignored), or nil for a missing header, another scheme or an empty credential.
package enum BearerToken {
    package static func parse(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = parts[1].trimmingCharacters(in: .whitespaces)
        return credential.isEmpty ? nil : credential
    }
}
