import JSON

/// Compact JWS serialization (RFC 7515 §7.1) of a header and claims whose member order is the caller's.
package enum JWS {
    /// `base64url(header).base64url(claims).base64url(signature)`, signed with RS256.
    package static func rs256(
        header: [(key: String, value: JSONValue)], claims: [(key: String, value: JSONValue)], key: RS256PrivateKey
    ) throws(CryptoError) -> String {
        let signingInput =
            Base64URL.encode(JSONWriter.object(header)) + "." + Base64URL.encode(JSONWriter.object(claims))
        return signingInput + "." + Base64URL.encode(try key.sign(Array(signingInput.utf8)))
    }
}
