import JWTSigner

/// The production signer: an APNs `.p8` key signs provider tokens through `JWTSigner`.
extension ES256PrivateKey: APNsProviderTokenSigning {
    public func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String {
        try APNsProviderToken.make(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: self)
    }
}
