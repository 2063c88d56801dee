import Foundation

/// One credential of an instance, as stored (docs/OPERATIONS.md, "Many apps: keys and rotation"). Never holds a
/// scoped key's secret: only its SHA-256 digest; a Beams secret is kept sealed (AES-256-GCM) because it is also the
/// HS256 key of user tokens and must be recovered to verify them.
package struct APIKeyRecord: Sendable, Equatable {
    /// A scoped key (`psk_<id>_<secret>`) or a Beams secret (raw Bearer, every Beams SDK sends it as configured).
    package enum Kind: String, Sendable, Equatable {
        case scoped
        case beams
    }

    package var instanceID: String
    /// The public id: the middle part of a scoped key's text; a generated name for a Beams secret.
    package var id: String
    package var kind: Kind
    package var label: String
    /// Scope names (`publish`, `publish:read`, …); empty for a Beams secret, whose rights come from the config.
    package var scopes: [String]
    /// Lower-case hex SHA-256 of the secret part (scoped keys).
    package var secretDigest: String?
    /// The sealed secret, base64 (Beams secrets).
    package var sealedSecret: String?
    package var notBefore: Date?
    package var expiresAt: Date?
    package var createdAt: Date
    /// Written at most about once a minute per key and node, not per request.
    package var lastUsedAt: Date?
    package var revokedAt: Date?
    /// The key this one replaced when it was rolled.
    package var rotatedFrom: String?

    package init(
        instanceID: String, id: String, kind: Kind, label: String, scopes: [String], secretDigest: String? = nil,
        sealedSecret: String? = nil, notBefore: Date? = nil, expiresAt: Date? = nil, createdAt: Date,
        lastUsedAt: Date? = nil, revokedAt: Date? = nil, rotatedFrom: String? = nil
    ) {
        self.instanceID = instanceID
        self.id = id
        self.kind = kind
        self.label = label
        self.scopes = scopes
        self.secretDigest = secretDigest
        self.sealedSecret = sealedSecret
        self.notBefore = notBefore
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
        self.rotatedFrom = rotatedFrom
    }
}

/// A key that authenticated a request at `at`, for `APIKeyStore.recordAPIKeyUses`.
package struct APIKeyUse: Sendable, Equatable {
    package var instanceID: String
    package var id: String
    package var at: Date

    package init(instanceID: String, id: String, at: Date) {
        self.instanceID = instanceID
        self.id = id
        self.at = at
    }
}
