import COpenSSL
import JWTSigner

/// RFC 8291's per-message key agreement on P-256 at the `EC_POINT` level: a fresh random scalar `k`, the sender's
/// public point `k·G` and the shared secret, the x coordinate of `k·ua_public`.
///
/// The same two scalar multiplications OpenSSL's own EC key generation and ECDH derivation make (`EC_POINT_mul`
/// on the group's method, constant-time for a secret scalar), without the EVP layer around them: no `EVP_PKEY`
/// with its provider key data and parameter export per message key, no `EVP_PKEY_CTX` per key generation and per
/// derivation (bench/swift/WebPushBench `seq:` lines, docs/BENCHMARKS.md "Web Push encryption").
///
/// @unchecked Sendable: `group` and `order` are set once and only read afterwards (`EC_POINT_mul`,
/// `EC_POINT_point2oct` and `BN_priv_rand_range_ex` take them `const`); each call has its own `BN_CTX` and points.
package final class P256Curve: @unchecked Sendable {
    /// The process's curve; nil if OpenSSL cannot build the group, and the encryption takes the EVP path.
    package static let shared = P256Curve()

    private let group: OpaquePointer
    private let order: OpaquePointer

    private init?() {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            ERR_clear_error()
            return nil
        }
        guard let order = EC_GROUP_get0_order(group).flatMap({ BN_dup($0) }) else {
            EC_GROUP_free(group)
            ERR_clear_error()
            return nil
        }
        self.group = group
        self.order = order
    }

    deinit {
        BN_free(order)
        EC_GROUP_free(group)
    }

    /// A subscriber's point, decoded once per subscription; OpenSSL refuses one that is not on the curve.
    package func point(_ uncompressed: [UInt8]) throws(CryptoError) -> P256SubscriberPoint {
        guard uncompressed.count == P256Point.size, uncompressed[0] == 0x04 else {
            throw CryptoError(operation: "EC_POINT_oct2point", messages: ["not a 65-byte uncompressed point"])
        }
        let point = try check(EC_POINT_new(group), "EC_POINT_new")
        guard EC_POINT_oct2point(group, point, uncompressed, uncompressed.count, nil) == 1 else {
            EC_POINT_free(point)
            ERR_clear_error()
            throw CryptoError(operation: "EC_POINT_oct2point", messages: ["not a point on P-256"])
        }
        return P256SubscriberPoint(owning: point, curve: self)
    }

    /// One message's ECDH with `peer`: a fresh scalar (`BN_priv_rand_range_ex` below the group order, never 0, as
    /// OpenSSL's key generation draws it), the 65-byte public point `04‖x‖y` and the 32-byte shared secret.
    ///
    /// - Parameter scalar: 32 big-endian bytes instead of a fresh draw. Inject only in tests: reusing a scalar
    ///   reuses the message key.
    package func agreement(with peer: P256SubscriberPoint, scalar injected: [UInt8]? = nil) throws(CryptoError) -> (
        publicPoint: [UInt8], sharedSecret: [UInt8]
    ) {
        let context = try check(BN_CTX_secure_new(), "BN_CTX_secure_new")
        defer { BN_CTX_free(context) }
        let scalar = try check(BN_secure_new(), "BN_secure_new")
        defer { BN_clear_free(scalar) }
        BN_set_flags(scalar, BN_FLG_CONSTTIME)
        if let injected {
            guard injected.count == 32, BN_bin2bn(injected, 32, scalar) != nil, BN_is_zero(scalar) == 0,
                BN_cmp(scalar, order) < 0
            else { throw CryptoError(operation: "P256Curve.agreement", messages: ["scalar outside 1..<n"]) }
        } else {
            repeat {
                try check(BN_priv_rand_range_ex(scalar, order, 0, context), "BN_priv_rand_range_ex")
            } while BN_is_zero(scalar) == 1
        }
        let point = try check(EC_POINT_new(group), "EC_POINT_new")
        defer { EC_POINT_clear_free(point) }
        try check(EC_POINT_mul(group, point, scalar, nil, nil, context), "EC_POINT_mul (k·G)")
        var publicPoint = [UInt8](repeating: 0, count: P256Point.size)
        let written = EC_POINT_point2oct(
            group, point, POINT_CONVERSION_UNCOMPRESSED, &publicPoint, publicPoint.count, context)
        guard written == P256Point.size else {
            throw CryptoError(operation: "EC_POINT_point2oct", messages: ["wrote \(written) bytes"])
        }
        try check(EC_POINT_mul(group, point, nil, peer.pointer, scalar, context), "EC_POINT_mul (k·ua_public)")
        let x = try check(BN_secure_new(), "BN_secure_new")
        defer { BN_clear_free(x) }
        try check(EC_POINT_get_affine_coordinates(group, point, x, nil, context), "EC_POINT_get_affine_coordinates")
        var secret = [UInt8](repeating: 0, count: 32)
        // `BN_bn2binpad` returns the length written (32), or -1.
        try check(BN_bn2binpad(x, &secret, 32) == 32 ? Int32(1) : 0, "BN_bn2binpad")
        return (publicPoint, secret)
    }
}

/// A subscriber's public point as an `EC_POINT` of `P256Curve.shared`, parsed once per subscription and only read
/// afterwards (so shared across the encryption workers without a lock).
package final class P256SubscriberPoint: @unchecked Sendable {
    // @unchecked Sendable: `pointer` is never mutated after init; `EC_POINT_mul` takes the peer point `const`.
    fileprivate let pointer: OpaquePointer
    /// Keeps the group the point belongs to alive.
    private let curve: P256Curve

    fileprivate init(owning pointer: OpaquePointer, curve: P256Curve) {
        self.pointer = pointer
        self.curve = curve
    }

    deinit { EC_POINT_free(pointer) }
}
