/// Signs APNs provider tokens (ES256 JWTs). `JWTSigner` provides the real implementation; the client depends only
/// on this so its token logic is testable without keys.
public protocol APNsProviderTokenSigning: Sendable {
    /// The compact JWT (`header.claims.signature`, no `bearer ` prefix) for `keyID`/`teamID` issued at
    /// `issuedAt` (UNIX seconds).
    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String
}

/// One team's token-based credentials. APNs binds a connection to one team on its first push, so the client keeps
/// a separate connection pool per (team, key, environment).
public struct APNsCredentials: Sendable {
    /// The 10-character Team ID (`iss`).
    public let teamID: String
    /// The 10-character Key ID of the `.p8` key (`kid`).
    public let keyID: String
    /// Signs tokens with the team's private key.
    public let key: any APNsProviderTokenSigning

    public init(teamID: String, keyID: String, key: any APNsProviderTokenSigning) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }
}
