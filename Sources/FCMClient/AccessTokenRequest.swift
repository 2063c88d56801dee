import JSON
import JWTSigner

/// The OAuth2 JWT-bearer grant (RFC 7523) that trades a service account's signed assertion for an access token,
/// as Google documents it in "Using OAuth 2.0 for Server to Server Applications".
package struct AccessTokenRequest: Sendable, Equatable {
    /// The scope FCM HTTP v1 needs.
    package static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// RFC 7523's grant type.
    package static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google refuses assertions valid for longer than an hour ("Token must be a short-lived token (60 minutes)").
    package static let maxLifetime = 3600
    /// The `Content-Type` of the body.
    package static let contentType = "application/x-www-form-urlencoded"

    /// Where to POST: the service account's `token_uri`.
    package let url: String
    /// The signed assertion (an RS256 JWT).
    package let assertion: String
    /// `grant_type=…&assertion=…`, form-encoded.
    package let body: [UInt8]

    /// Signs an assertion for `account`, issued at `issuedAt` (UNIX seconds, wall time: Google compares it with
    /// its own clock) and valid for `lifetime` seconds (clamped to 1…3600).
    ///
    /// Header `{"alg":"RS256","typ":"JWT","kid":private_key_id}`; claims `iss` = client_email, `scope`, `aud` =
    /// token_uri, `iat`, `exp`, all NumericDates as JSON integers.
    package init(account: ServiceAccount, issuedAt: Int, lifetime: Int = AccessTokenRequest.maxLifetime)
        throws(CryptoError)
    {
        let lifetime = min(max(lifetime, 1), Self.maxLifetime)
        let header: [(key: String, value: JSONValue)] = [
            ("alg", "RS256"), ("typ", "JWT"), ("kid", .string(account.privateKeyID)),
        ]
        let claims: [(key: String, value: JSONValue)] = [
            ("iss", .string(account.clientEmail)),
            ("scope", .string(Self.messagingScope)),
            ("aud", .string(account.tokenURI)),
            ("iat", .int(issuedAt)),
            // Saturating: a wall clock near Int.max is absurd, but must not trap.
            ("exp", .int(issuedAt.addingReportingOverflow(lifetime).overflow ? Int.max : issuedAt + lifetime)),
        ]
        url = account.tokenURI
        assertion = try JWS.rs256(header: header, claims: claims, key: account.privateKey)
        body = Array(
            ("grant_type=" + FormEncoding.encode(Self.grantType) + "&assertion=" + FormEncoding.encode(assertion)).utf8)
    }
}

/// `application/x-www-form-urlencoded` value encoding (WHATWG URL §5.2): everything but `A–Z a–z 0–9 * - . _`
/// percent-encoded (spaces too, as `%20`; the `+` form is optional and never needed here).
enum FormEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
