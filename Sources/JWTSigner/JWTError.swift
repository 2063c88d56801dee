import JSON

/// Why a token was rejected. Cases are specific so callers can map them to their own responses (Beams answers
/// `401 Invalid JWT claims: Token used before issued`, for instance).
package enum JWTError: Error, Equatable, Sendable, CustomStringConvertible {
    /// One of the three dot-separated parts of a compact JWS.
    package enum Segment: String, Sendable, Equatable {
        case header, claims, signature
    }

    /// How the token's structure is broken.
    package enum Malformed: Sendable, Equatable {
        /// Not `header.claims.signature`; the number of segments found.
        case segmentCount(Int)
        /// A segment that is not strict base64url.
        case invalidBase64URL(Segment, Base64URLError)
        /// A header or claims segment that is not a JSON object (`nil` reason: valid JSON, but not an object).
        case notJSONObject(Segment, JSONParseError?)
        /// The header has no `alg`, or it is not a string.
        case missingAlgorithm
        /// The header has `crit`: it lists extensions that must be understood, and this verifier knows none
        /// (RFC 7515 §4.1.11 requires rejecting the token then).
        case criticalHeader
    }

    case malformed(Malformed)
    /// `alg` names something this module never accepts: `none`, `RS256`, `HS512`, …
    case unsupportedAlgorithm(String)
    /// `alg` is supported but not the one the caller expects (an ES256 token where HS256 is expected, or an HS256
    /// token where ES256 is expected: the algorithm-confusion attack).
    case unexpectedAlgorithm(expected: JWTAlgorithm, found: JWTAlgorithm)
    /// The caller passed a key of the wrong kind for `expectedAlgorithm` (a programming error, never the token's).
    case keyDoesNotMatchAlgorithm(JWTAlgorithm)
    /// The signature does not verify with the given key.
    case badSignature
    /// A registered claim of the wrong type: `exp`/`iat`/`nbf` not an integer NumericDate, `sub`/`iss` not a string.
    case invalidClaim(String)
    /// `exp` + leeway < now.
    case expired(exp: Int, now: Int)
    /// `iat` - leeway > now: issued in the future.
    case usedBeforeIssued(iat: Int, now: Int)
    /// `nbf` - leeway > now.
    case notYetValid(nbf: Int, now: Int)

    package var description: String {
        switch self {
        case .malformed(.segmentCount(let count)): return "malformed token: \(count) segments, expected 3"
        case .malformed(.invalidBase64URL(let segment, let error)):
            return "malformed token: \(segment.rawValue) is not base64url (\(error))"
        case .malformed(.notJSONObject(let segment, _)):
            return "malformed token: \(segment.rawValue) is not a JSON object"
        case .malformed(.missingAlgorithm): return "malformed token: header has no alg"
        case .malformed(.criticalHeader): return "malformed token: unsupported crit header"
        case .unsupportedAlgorithm(let alg): return "unsupported algorithm \(alg)"
        case .unexpectedAlgorithm(let expected, let found):
            return "expected algorithm \(expected.rawValue), token uses \(found.rawValue)"
        case .keyDoesNotMatchAlgorithm(let alg): return "the verification key is not a \(alg.rawValue) key"
        case .badSignature: return "signature verification failed"
        case .invalidClaim(let name): return "invalid \(name) claim"
        case .expired: return "token is expired"
        case .usedBeforeIssued: return "token used before issued"
        case .notYetValid: return "token is not valid yet"
        }
    }
}
