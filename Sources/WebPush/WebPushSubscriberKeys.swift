import JWTSigner

/// A subscription's encryption keys (the browser's `PushSubscription.getKey("p256dh")` and `getKey("auth")`),
/// validated: the point is on P-256 and the secret is 16 bytes.
package struct WebPushSubscriberKeys: Sendable {
    /// Size of the `auth` secret (RFC 8291 §3.2).
    package static let authSecretSize = 16

    /// `ua_public` as an OpenSSL key, for ECDH.
    package let publicKey: ES256PublicKey
    /// `ua_public`, the 65-byte uncompressed point.
    package let publicPoint: [UInt8]
    /// `auth_secret`.
    package let authSecret: [UInt8]

    /// Validates raw key bytes.
    /// - Throws: `WebPushSubscriptionError` naming the field.
    package init(p256dh: [UInt8], auth: [UInt8]) throws(WebPushSubscriptionError) {
        guard p256dh.count == P256Point.size else {
            throw .wrongLength(.p256dh, expected: P256Point.size, found: p256dh.count)
        }
        guard p256dh[0] == 0x04 else { throw .notUncompressedPoint }
        guard auth.count == Self.authSecretSize else {
            throw .wrongLength(.auth, expected: Self.authSecretSize, found: auth.count)
        }
        do {
            publicKey = try ES256PublicKey(uncompressedPoint: p256dh)
        } catch {
            throw .notOnCurve
        }
        publicPoint = p256dh
        authSecret = auth
    }
}
