import JSON
import JWTSigner

/// The VAPID JWT (RFC 8292 §2): header `{"alg":"ES256","typ":"JWT"}`, claims `aud`, `exp`, `sub`.
package enum VAPIDToken {
    /// RFC 8292 §2: `exp` MUST NOT be more than 24 hours after the request.
    package static let maxLifetime = 24 * 60 * 60

    /// Signs a token. When to sign and which `exp` to give is `VAPIDTokenState`'s decision.
    ///
    /// - Parameters:
    ///   - audience: the push service's origin (`WebPushSubscription.audience`).
    ///   - subject: the operator contact.
    ///   - expiresAt: `exp`, UNIX seconds.
    ///   - key: the VAPID private key.
    package static func make(audience: String, subject: VAPIDSubject, expiresAt: Int, key: ES256PrivateKey)
        throws(CryptoError) -> String
    {
        let header = JSONWriter.object([("alg", "ES256"), ("typ", "JWT")])
        let claims = JSONWriter.object([
            ("aud", .string(audience)), ("exp", .int(expiresAt)),
            ("sub", .string(subject.value)),
        ])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}

/// The `Authorization` header of RFC 8292 §3: `vapid t=<JWT>, k=<base64url public key>`.
package struct VAPIDAuthorization: Sendable, Equatable {
    /// The JWT.
    package let token: String
    /// The base64url uncompressed public key.
    package let publicKey: String

    package init(token: String, publicKey: String) {
        self.token = token
        self.publicKey = publicKey
    }

    /// The header value.
    package var headerValue: String { "vapid t=\(token), k=\(publicKey)" }

    /// The whole header.
    package var header: WebPushHeader { WebPushHeader(name: "Authorization", value: headerValue) }
}
