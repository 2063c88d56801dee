import JSON

/// The claims of a verified token.
///
/// The verifier has already checked the registered claims' types, so `nil` always means "absent": a caller that
/// requires `sub` writes `guard let sub = claims.sub` and reports the claim as missing.
package struct JWTClaims: Sendable, Equatable {
    /// Every claim, as parsed.
    package let all: [String: JSONValue]
    /// `sub` (subject; the Beams user id).
    package let sub: String?
    /// `iss` (issuer).
    package let iss: String?
    /// `exp` (expiry, seconds since the epoch).
    package let exp: Int?
    /// `iat` (issued at, seconds since the epoch).
    package let iat: Int?
    /// `nbf` (not before, seconds since the epoch).
    package let nbf: Int?

    /// Checks the registered claims' types and extracts them.
    init(validating all: [String: JSONValue]) throws(JWTError) {
        func string(_ name: String) throws(JWTError) -> String? {
            guard let value = all[name] else { return nil }
            guard let text = value.stringValue else { throw .invalidClaim(name) }
            return text
        }
        func date(_ name: String) throws(JWTError) -> Int? {
            guard let value = all[name] else { return nil }
            guard let seconds = value.numericDate else { throw .invalidClaim(name) }
            return seconds
        }
        self.all = all
        self.sub = try string("sub")
        self.iss = try string("iss")
        self.exp = try date("exp")
        self.iat = try date("iat")
        self.nbf = try date("nbf")
    }

    /// A claim by name.
    package subscript(name: String) -> JSONValue? { all[name] }

    /// The names among `required` that the token does not carry, in the given order.
    package func missing(_ required: [String]) -> [String] {
        required.filter { all[$0] == nil }
    }
}
