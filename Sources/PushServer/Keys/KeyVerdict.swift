import ConfigModel
import Foundation
import PushStore

/// Who a request authenticated as: a scoped key (its id and scopes) or the instance's Beams secret.
package struct Credential: Sendable, Equatable {
    /// The scoped key's id, or the stored Beams secret row's id; nil for the Beams secret from the config file.
    package var keyID: String?
    package var isBeamsSecret: Bool
    package var scopes: Set<APIKeyScope>
}

/// One Beams secret an instance accepts right now, in plain text (it verifies user-token signatures).
package struct AcceptedBeamsSecret: Sendable, Equatable {
    /// The stored row's id; nil for the config file's secret.
    package var keyID: String?
    package var secret: String
}

/// The decision on one presented key, without I/O: what `AppContext.authorize` answers (docs/SECURITY.md).
package enum KeyVerdict: Sendable, Equatable {
    case allowed(Credential)
    /// No such key, a wrong secret, or not a key at all: 401.
    case unknown
    /// The secret matched a key that is revoked, expired or not valid yet: 401 saying which.
    case revoked, expired, notYetValid
    /// A valid key without the route's scope: 403 naming it.
    case missingScope(APIKeyScope)

    /// Judges `presented` (the Bearer value) for a route that needs `required`.
    /// - Parameters:
    ///   - keys: the instance's stored keys (any state).
    ///   - beamsSecrets: the Beams secrets accepted now (`BeamsSecrets.accepted`).
    ///   - beamsScopes: what the Beams secret may do (`instances[].beamsSecretScopes`).
    package static func judge(
        _ presented: String, required: APIKeyScope, keys: [APIKeyRecord], beamsSecrets: [AcceptedBeamsSecret],
        beamsScopes: Set<APIKeyScope>, now: Date
    ) -> KeyVerdict {
        let credential: Credential
        if let parsed = ScopedKeyText.parse(presented),
            let key = keys.first(where: { $0.kind == .scoped && $0.id == parsed.id })
        {
            guard let stored = key.secretDigest, let digest = try? parsed.digest, ConstantTime.equals(digest, stored)
            else { return .unknown }
            if key.revokedAt != nil { return .revoked }
            if let notBefore = key.notBefore, now < notBefore { return .notYetValid }
            if let expiresAt = key.expiresAt, now >= expiresAt { return .expired }
            credential = Credential(
                keyID: key.id, isBeamsSecret: false,
                scopes: Set(key.scopes.compactMap(APIKeyScope.init(rawValue:))))
        } else {
            // Anything else is compared with the Beams secrets (a config-file secret may itself start with `psk_`).
            // Every accepted secret is compared (no early exit), so the time taken does not tell which one matched.
            var matched: AcceptedBeamsSecret?
            for accepted in beamsSecrets where ConstantTime.equals(presented, accepted.secret) { matched = accepted }
            guard let matched else { return .unknown }
            credential = Credential(keyID: matched.keyID, isBeamsSecret: true, scopes: beamsScopes)
        }
        return credential.scopes.contains(required) ? .allowed(credential) : .missingScope(required)
    }
}

/// Which Beams secrets an instance accepts: the config file's until the secret is first rolled; afterwards the
/// stored ones that are neither revoked nor past their expiry (the overlap of a roll).
package enum BeamsSecrets {
    /// - Parameters:
    ///   - stored: the instance's stored Beams secret rows with their opened plain text (rows that did not open are
    ///     left out by the caller).
    ///   - anyStored: whether the instance has any stored Beams secret row, open or not: then the config file's
    ///     secret is no longer the instance's (it was rolled).
    /// - Returns: the accepted secrets, the current one (the one new user tokens are signed with) first.
    package static func accepted(
        config: String, stored: [(record: APIKeyRecord, secret: String)], anyStored: Bool, now: Date
    ) -> [AcceptedBeamsSecret] {
        guard anyStored else { return [AcceptedBeamsSecret(keyID: nil, secret: config)] }
        let live = stored.filter { row in
            row.record.revokedAt == nil && (row.record.expiresAt.map { now < $0 } ?? true)
        }
        // Current: the newest without an expiry; while every live one expires (a roll is in its overlap and its
        // replacement did not open), the newest.
        let ordered = live.sorted { a, b in
            let aOpen = a.record.expiresAt == nil
            let bOpen = b.record.expiresAt == nil
            if aOpen != bOpen { return aOpen }
            return (a.record.createdAt, a.record.id) > (b.record.createdAt, b.record.id)
        }
        return ordered.map { AcceptedBeamsSecret(keyID: $0.record.id, secret: $0.secret) }
    }
}

/// How long a rolled key keeps working: `now`, or a duration such as `1h`, `24h`, `7d`, `90s`, `30m` (at most 30
/// days). A bare number is seconds.
package enum RollOverlap {
    package static let longest: Double = 30 * 86_400

    /// - Returns: seconds, or nil when `text` is not a duration within 0…30 days.
    package static func seconds(_ text: String) -> Double? {
        if text == "now" { return 0 }
        guard let unit = text.last else { return nil }
        let multiplier: Double
        var digits = Substring(text)
        switch unit {
        case "s": multiplier = 1
        case "m": multiplier = 60
        case "h": multiplier = 3600
        case "d": multiplier = 86_400
        case "0"..."9": multiplier = 1
        default: return nil
        }
        if !unit.isNumber { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count <= 9,
            let value = Double(digits)
        else { return nil }
        let seconds = value * multiplier
        return seconds <= longest ? seconds : nil
    }
}
