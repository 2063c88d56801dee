import JWTSigner

/// The production signer: an APNs `.p8` key signs provider tokens through `JWTSigner`.
extension ES256PrivateKey: APNsProviderTokenSigning {
    package func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String {
        try APNsProviderToken.make(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: self)
    }
}

extension APNsCredentials {
    /// Credentials from the contents of Apple's `.p8` key (PKCS#8 PEM).
    /// - Throws: `KeyLoadError` when the PEM is not a P-256 private key.
    package init(teamID: String, keyID: String, privateKeyPEM: String) throws {
        self.init(teamID: teamID, keyID: keyID, key: try ES256PrivateKey(pem: privateKeyPEM))
    }

    /// Credentials from a `.p8` file (e.g. `AuthKey_ABC123DEFG.p8`).
    /// - Throws: `KeyLoadError` when the file cannot be read or is not a P-256 private key.
    package init(teamID: String, keyID: String, privateKeyPath: String) throws {
        self.init(teamID: teamID, keyID: keyID, key: try ES256PrivateKey(contentsOfFile: privateKeyPath))
    }
}
