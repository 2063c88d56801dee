import JWTSigner

/// Beams user tokens: the HS256 JWTs an app's auth endpoint hands the client SDK (`generateToken` in every
/// server SDK), presented on `PUT …/devices/apns/{id}/user` (docs/BEAMS-PROTOCOL.md §7).
public enum BeamsUserToken {
    package static let maxSubjectBytes = 164
    /// Clock skew tolerated on `exp` and `iat`: the Python and Java SDKs compute `exp` in local time on non-UTC
    /// hosts, and the real service's zero leeway produced "Token used before issued" support threads.
    package static let leewaySeconds = 120

    /// The issuer the server SDKs write: `https://{instanceId}.pushnotifications.pusher.com`.
    package static func issuer(instanceID: String) -> String { "https://\(instanceID).pushnotifications.pusher.com" }

    /// Issues a token exactly like the server SDKs (`sub`, `iss`, `exp`, plus `iat` like Node's). An `exp` past
    /// `Int.max` (`push-server token --ttl 9223372036854775807`) saturates instead of trapping.
    package static func issue(instanceID: String, userID: String, secret: String, now: Int, lifetime: Int = 86_400)
        throws -> String
    {
        let (exp, overflow) = now.addingReportingOverflow(lifetime)
        return try HS256.sign(
            claims: [
                "sub": .string(userID),
                "iss": .string(issuer(instanceID: instanceID)),
                "iat": .int(now),
                "exp": .int(overflow ? (lifetime > 0 ? .max : .min) : exp),
            ], secret: secret)
    }

    /// Verifies the `Authorization` header of `PUT …/user` and returns the user id.
    ///
    /// - Throws: `BeamsError` with the service's statuses: 401 for a missing or malformed header, a bad signature
    ///   or time claims; 400 for missing `exp`/`sub`/`iss` or a `sub` outside 1–164 bytes; 403 for another issuer.
    public static func verify(authorization: String?, instanceID: String, secret: String, now: Int) throws(BeamsError)
        -> String
    {
        guard let authorization, !authorization.isEmpty else {
            throw BeamsError(401, "Unauthorized", "`Authorization` header token is missing")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw BeamsError(401, "Unauthorized", "`Authorization` header token is malformed")
        }
        let verifier = JWTVerifier(key: .hs256(secret: secret), expectedAlgorithm: .hs256, leeway: leewaySeconds)
        let claims: JWTClaims
        do {
            claims = try verifier.verify(String(parts[1]).trimmingCharacters(in: .whitespaces), now: now)
        } catch {
            throw map(error)
        }
        guard claims.exp != nil else { throw BeamsError(400, "Bad request", "Missing expiration (exp) field in JWT") }
        guard let subject = claims.sub else {
            throw BeamsError(400, "Bad request", "Missing subject (sub) field in JWT")
        }
        guard (1...maxSubjectBytes).contains(subject.utf8.count) else {
            throw BeamsError(400, "Bad request", "JWT subject (sub) must be between 1-164 characters long")
        }
        guard let issuer = claims.iss else { throw BeamsError(400, "Bad request", "Missing issuer (iss) field in JWT") }
        guard isAcceptedIssuer(issuer, instanceID: instanceID) else {
            throw BeamsError(403, "Forbidden", "Invalid JWT issuer")
        }
        return subject
    }

    /// `https://{id}.pushnotifications.pusher.com`, the host compared case-insensitively (Python lower-cases it),
    /// or the scheme-less form the server-Swift SDK 2.0.0 writes.
    static func isAcceptedIssuer(_ issuer: String, instanceID: String) -> Bool {
        var host = Substring(issuer)
        if host.lowercased().hasPrefix("https://") { host = host.dropFirst(8) }
        if host.hasSuffix("/") { host = host.dropLast() }
        return host.lowercased() == "\(instanceID).pushnotifications.pusher.com".lowercased()
    }

    private static func map(_ error: JWTError) -> BeamsError {
        switch error {
        case .malformed, .keyDoesNotMatchAlgorithm:
            return BeamsError(401, "Unauthorized", "`Authorization` header token is malformed")
        case .unsupportedAlgorithm(let alg):
            return BeamsError(
                401, "Unauthorized", "Invalid JWT: algorithm \(alg.prefix(20)) is not accepted, use HS256")
        case .unexpectedAlgorithm(_, let found):
            return BeamsError(
                401, "Unauthorized", "Invalid JWT: algorithm \(found.rawValue) is not accepted, use HS256")
        case .badSignature:
            return BeamsError(401, "Unauthorized", "Invalid JWT: signature is invalid")
        case .invalidClaim(let name):
            return BeamsError(401, "Unauthorized", "Invalid JWT claims: \(name) has the wrong type")
        case .expired:
            return BeamsError(401, "Unauthorized", "Invalid JWT claims: Token is expired")
        case .usedBeforeIssued:
            return BeamsError(401, "Unauthorized", "Invalid JWT claims: Token used before issued")
        case .notYetValid:
            return BeamsError(401, "Unauthorized", "Invalid JWT claims: Token is not valid yet")
        }
    }
}
