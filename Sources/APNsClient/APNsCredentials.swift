import TLSIdentity

/// Signs APNs provider tokens (ES256 JWTs). `JWTSigner` provides the real implementation; the client depends only
/// on this so its token logic is testable without keys.
package protocol APNsProviderTokenSigning: Sendable {
    /// The compact JWT (`header.claims.signature`, no `bearer ` prefix) for `keyID`/`teamID` issued at
    /// `issuedAt` (UNIX seconds).
    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String
}

/// One app's credentials: a team's `.p8` key (token authentication), or a TLS client certificate (certificate
/// authentication). APNs binds a connection to one team on its first push, and a certificate to its connection
/// in the handshake, so the client keeps a separate connection pool per (team, key or certificate, environment).
package struct APNsCredentials: Sendable {
    /// How APNs learns who is sending.
    package enum Kind: String, Sendable, Hashable {
        /// A provider token (JWT) in every request's `authorization` header.
        case token
        /// A client certificate in the TLS handshake; no `authorization` header, no token refresh.
        case certificate
    }

    /// The 10-character Team ID (`iss`); for a certificate, its subject's OU (Apple's Team ID) or "".
    package let teamID: String
    /// The 10-character Key ID of the `.p8` key (`kid`); for a certificate, `certificate:` and its SHA-256
    /// fingerprint, which keeps each certificate in a pool of its own.
    package let keyID: String
    /// Signs tokens with the team's private key. Certificate credentials carry a signer that refuses: their
    /// pools never ask for a token.
    package let key: any APNsProviderTokenSigning
    /// The client certificate presented on every connection (certificate credentials only).
    package let certificate: TLSClientIdentity?

    package init(teamID: String, keyID: String, key: any APNsProviderTokenSigning) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.certificate = nil
    }

    /// Certificate credentials: `identity` is presented in every TLS handshake of its pool.
    package init(certificate identity: TLSClientIdentity) {
        teamID = identity.certificate.organizationalUnit ?? ""
        keyID = "certificate:" + identity.certificate.sha256Fingerprint
        key = CertificateCredentialsSignNoTokens()
        certificate = identity
    }

    package var kind: Kind { certificate == nil ? .token : .certificate }

    /// Whether push types that APNs accepts only with token authentication (`liveactivity`, `location`) can
    /// be sent with these credentials; the client refuses them otherwise (`APNsViolation.pushTypeNeedsTokenAuthentication`),
    /// and intake can refuse them up front.
    package var supportsTokenOnlyPushTypes: Bool { kind == .token }
}

/// Why a certificate credential's signer refuses.
package struct CertificateCredentialsSignNoTokens: APNsProviderTokenSigning, Error, CustomStringConvertible {
    package var description: String { "certificate credentials sign no provider tokens" }

    package func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String { throw self }
}
