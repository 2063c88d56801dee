import JSON

/// Verifies compact JWS tokens (HS256 or ES256) and the time claims; the caller checks everything else.
///
/// Order of checks: structure (three base64url segments, header a JSON object with a string `alg`, no `crit`),
/// algorithm (must equal `expectedAlgorithm`; `none` and anything else unsupported is refused before any key is
/// touched), signature, claims (a JSON object whose registered claims have the right types), then time.
package struct JWTVerifier: Sendable {
    /// The verification key; its kind must match `expectedAlgorithm`.
    package var key: JWTVerificationKey
    /// The only algorithm accepted. Fixed by the caller, never taken from the token, which is what defeats
    /// algorithm confusion.
    package var expectedAlgorithm: JWTAlgorithm
    /// Seconds of clock skew tolerated on `exp`, `iat` and `nbf`. Default 0.
    package var leeway: Int

    package init(key: JWTVerificationKey, expectedAlgorithm: JWTAlgorithm, leeway: Int = 0) {
        precondition(leeway >= 0, "leeway must not be negative")
        self.key = key
        self.expectedAlgorithm = expectedAlgorithm
        self.leeway = leeway
    }

    /// Verifies `token` at time `now` (seconds since the epoch) and returns its claims.
    package func verify(_ token: String, now: Int) throws(JWTError) -> JWTClaims {
        try Self.verify(token, key: key, expectedAlgorithm: expectedAlgorithm, now: now, leeway: leeway)
    }

    /// Verifies `token` at time `now` (seconds since the epoch) and returns its claims.
    package static func verify(
        _ token: String, key: JWTVerificationKey, expectedAlgorithm: JWTAlgorithm, now: Int, leeway: Int = 0
    ) throws(JWTError) -> JWTClaims {
        precondition(leeway >= 0, "leeway must not be negative")
        guard key.algorithm == expectedAlgorithm else { throw .keyDoesNotMatchAlgorithm(expectedAlgorithm) }

        let bytes = Array(token.utf8)
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw .malformed(.segmentCount(segments.count)) }
        let headerBytes = try decode(segments[0], .header)
        let claimsBytes = try decode(segments[1], .claims)
        let signature = try decode(segments[2], .signature)

        let header = try object(headerBytes, .header)
        guard let algName = header["alg"]?.stringValue else { throw .malformed(.missingAlgorithm) }
        guard let algorithm = JWTAlgorithm(rawValue: algName) else { throw .unsupportedAlgorithm(algName) }
        guard algorithm == expectedAlgorithm else {
            throw .unexpectedAlgorithm(expected: expectedAlgorithm, found: algorithm)
        }
        if header["crit"] != nil { throw .malformed(.criticalHeader) }

        // The signing input is the first two segments exactly as received (RFC 7515 §5.2), not a re-encoding.
        let signingInput = Array(bytes[..<segments[1].endIndex])
        let valid: Bool
        switch key {
        case .hs256(let secret): valid = HS256.isValid(signature: signature, message: signingInput, key: secret)
        case .es256(let publicKey): valid = publicKey.verify(signature: signature, message: signingInput)
        }
        guard valid else { throw .badSignature }

        let claims = try JWTClaims(validating: try object(claimsBytes, .claims))
        try checkTimes(claims, now: now, leeway: leeway)
        return claims
    }

    private static func decode(_ segment: ArraySlice<UInt8>, _ name: JWTError.Segment) throws(JWTError) -> [UInt8] {
        do {
            return try Base64URL.decode(utf8: segment)
        } catch {
            throw .malformed(.invalidBase64URL(name, error))
        }
    }

    private static func object(_ bytes: [UInt8], _ name: JWTError.Segment) throws(JWTError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw .malformed(.notJSONObject(name, error))
        }
        guard let members = value.objectValue else { throw .malformed(.notJSONObject(name, nil)) }
        return members
    }

    /// Comparisons are arranged so that no claim value is added to (a huge `exp` must not overflow); `now` and
    /// `leeway` come from the caller and are sane.
    private static func checkTimes(_ claims: JWTClaims, now: Int, leeway: Int) throws(JWTError) {
        if let exp = claims.exp, exp < now - leeway { throw .expired(exp: exp, now: now) }
        if let iat = claims.iat, iat > now + leeway { throw .usedBeforeIssued(iat: iat, now: now) }
        if let nbf = claims.nbf, nbf > now + leeway { throw .notYetValid(nbf: nbf, now: now) }
    }
}
