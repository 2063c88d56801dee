import JWTSigner

/// A subscription's encryption keys (the browser's `PushSubscription.getKey("p256dh")` and `getKey("auth")`),
/// validated: the point is on P-256 and the secret is 16 bytes.
package struct WebPushSubscriberKeys: Sendable {
    /// Size of the `auth` secret (RFC 8291 §3.2).
    package static let authSecretSize = 16

    /// `ua_public`, the 65-byte uncompressed point.
    package let publicPoint: [UInt8]
    /// `auth_secret`.
    package let authSecret: [UInt8]
    /// `ua_public` as an `EC_POINT` for the per-message agreement (`P256Curve`), decoded here once per subscription;
    /// nil only if OpenSSL cannot build the curve, and the encryption takes the EVP path (`evpPublicKey()`).
    package let point: P256SubscriberPoint?

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
        // `EC_POINT_oct2point` refuses a point off the curve, as the EVP import does, at a fifteenth of its cost
        // (1.5 against 25 µs, bench/swift/WebPushBench): an audience past the parsed-subscription cache pays it per
        // delivery.
        if let curve = P256Curve.shared {
            do throws(CryptoError) {
                point = try curve.point(p256dh)
            } catch {
                throw .notOnCurve
            }
        } else {
            do {
                _ = try ES256PublicKey(uncompressedPoint: p256dh)
            } catch {
                throw .notOnCurve
            }
            point = nil
        }
        publicPoint = p256dh
        authSecret = auth
    }

    /// `ua_public` as an OpenSSL EVP key, for the EVP derivation: only with a sender key a test injects, or without
    /// `P256Curve`; made per call.
    package func evpPublicKey() throws(CryptoError) -> ES256PublicKey {
        do {
            return try ES256PublicKey(uncompressedPoint: publicPoint)
        } catch {
            throw CryptoError(operation: "ES256PublicKey(uncompressedPoint:)", messages: ["\(error)"])
        }
    }
}
