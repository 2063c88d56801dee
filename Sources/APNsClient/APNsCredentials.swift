import TLSIdentity

/// Signs APNs provider tokens (ES256 JWTs). `JWTSigner` provides the real implementation; the client depends only
/// on this so its token logic is testable without keys.
public protocol APNsProviderTokenSigning: Sendable {
    /// The compact JWT (`header.claims.signature`, no `bearer ` prefix) for `keyID`/`teamID` issued at
    /// `issuedAt` (UNIX seconds).
    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String
}

/// One app's credentials: a team's `.p8` key (token authentication), or a TLS client certificate (certificate
/// authentication). APNs binds a connection to one team on its first push, and a certificate to its connection
/// in the handshake, so the client keeps a separate connection pool per (team, key or certificate, environment).
public struct APNsCredentials: Sendable {
    /// How APNs learns who is sending.
    public enum Kind: String, Sendable, Hashable {
        /// A provider token (JWT) in every request's `authorization` header.
        case token
        /// A client certificate in the TLS handshake; no `authorization` header, no token refresh.
        case certificate
    }

    /// The 10-character Team ID (`iss`); for a certificate, its subject's OU (Apple's Team ID) or "".
    public let teamID: String
    /// The 10-character Key ID of the `.p8` key (`kid`); for a certificate, `certificate:` and its SHA-256
    /// fingerprint, which keeps each certificate in a pool of its own.
    public let keyID: String
    /// Signs tokens with the team's private key. Certificate credentials carry a signer that refuses: their
    /// pools never ask for a token.
    public let key: any APNsProviderTokenSigning
    /// The client certificate presented on every connection (certificate credentials only).
    public let certificate: TLSClientIdentity?

    public init(teamID: String, keyID: String, key: any APNsProviderTokenSigning) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.certificate = nil
    }

    /// Certificate credentials: `identity` is presented in every TLS handshake of its pool.
    public init(certificate identity: TLSClientIdentity) {
        teamID = identity.certificate.organizationalUnit ?? ""
        keyID = "certificate:" + identity.certificate.sha256Fingerprint
        key = CertificateCredentialsSignNoTokens()
        certificate = identity
    }

    public var kind: Kind { certificate == nil ? .token : .certificate }

    /// Whether push types that APNs accepts only with token authentication (`liveactivity`, `location`) can
    /// be sent with these credentials; the client refuses them otherwise (`APNsViolation.pushTypeNeedsTokenAuthentication`),
    /// and intake can refuse them up front.
    public var supportsTokenOnlyPushTypes: Bool { kind == .token }
}

/// Why a certificate credential's signer refuses.
public struct CertificateCredentialsSignNoTokens: APNsProviderTokenSigning, Error, CustomStringConvertible {
    public var description: String { "certificate credentials sign no provider tokens" }

    public func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String { throw self }
}
