import JSON

/// The APNs provider authentication token: an ES256 JWT with header `{"alg":"ES256","kid":KEYID}` and claims
/// `{"iss":TEAMID,"iat":SECONDS}` (Apple, "Establishing a token-based connection to APNs").
package enum APNsProviderToken {
    /// Builds a token. `iat` is written as a JSON number (APNs rejects a string) and `kid` appears only in the
    /// header. APNs refuses tokens older than an hour and tokens refreshed more than once per 20 minutes;
    /// when to mint is the caller's decision, hence the injected `issuedAt`.
    ///
    /// - Parameters:
    ///   - keyID: the 10-character Key ID of the `.p8` key.
    ///   - teamID: the 10-character Team ID.
    ///   - issuedAt: seconds since the epoch.
    ///   - key: the `.p8` signing key.
    package static func make(keyID: String, teamID: String, issuedAt: Int, key: ES256PrivateKey) throws(CryptoError)
        -> String
    {
        let header = JSONWriter.object([("alg", "ES256"), ("kid", .string(keyID))])
        let claims = JSONWriter.object([("iss", .string(teamID)), ("iat", .int(issuedAt))])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
