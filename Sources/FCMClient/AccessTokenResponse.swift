import JSON

/// An OAuth2 access token as the token endpoint issued it.
package struct AccessToken: Sendable, Equatable, CustomStringConvertible {
    /// The opaque token, sent as `Authorization: Bearer <value>`. Checked to be a visible-ASCII header value.
    package let value: String
    /// Seconds it stays valid from the moment it was issued (Google: 3599).
    package let expiresIn: Int

    package init(value: String, expiresIn: Int) {
        self.value = value
        self.expiresIn = expiresIn
    }

    /// Never shows the token.
    package var description: String { "AccessToken(\(value.utf8.count) bytes, expires in \(expiresIn) s)" }
}

/// Why the token endpoint gave no usable token.
package enum AccessTokenError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A 4xx OAuth2 error (RFC 6749 §5.2), e.g. `invalid_grant` "Invalid JWT Signature." (the key was deleted or
    /// rotated) or "Token must be a short-lived token (60 minutes) and in a reasonable timeframe" (clock skew).
    /// Retrying without an operator's fix does not help.
    case rejected(status: Int, error: String, description: String)
    /// A 5xx, 429 or other answer that may succeed later.
    case unavailable(status: Int)
    /// No answer at all (connection refused, TLS failure, timeout): the transport's description.
    case transport(String)
    /// A 200 whose body is not a usable token answer: what is wrong.
    case malformedResponse(String)

    /// Whether an operator must act (wrong key, clock, account): `/ready` reports these.
    package var isConfigurationError: Bool {
        if case .rejected = self { return true }
        return false
    }

    package var description: String {
        switch self {
        case .rejected(let status, let error, let description):
            return "token endpoint refused the service account (\(status) \(error)): \(description)"
        case .unavailable(let status): return "token endpoint answered \(status)"
        case .transport(let reason): return "token endpoint unreachable: \(reason)"
        case .malformedResponse(let reason): return "token endpoint answer unusable: \(reason)"
        }
    }
}

extension AccessToken {
    /// Longest token accepted; Google's are about 1 KB, and the value becomes a request header.
    package static let maxLength = 8 * 1024
    /// Longest lifetime believed; a longer `expires_in` is clamped to it (Google's is an hour).
    package static let maxExpiresIn = 24 * 60 * 60
    /// Longest error text kept from a refusal.
    static let maxDescriptionLength = 512

    /// Reads the token endpoint's answer: 200 `{"access_token","expires_in","token_type":"Bearer"}`, else an error
    /// body `{"error","error_description"}`.
    package static func parse(status: Int, body: [UInt8]) throws(AccessTokenError) -> AccessToken {
        let object = (try? JSONValue(parsing: body, limits: JSONLimits(maxDepth: 8, maxBytes: 64 * 1024)))?.objectValue
        guard status == 200 else {
            if (400..<500).contains(status), status != 429 {
                let error = object?["error"]?.stringValue ?? "HTTP \(status)"
                let description = object?["error_description"]?.stringValue ?? ""
                throw .rejected(status: status, error: bounded(error), description: bounded(description))
            }
            throw .unavailable(status: status)
        }
        guard let object else { throw .malformedResponse("not a JSON object") }
        guard let value = object["access_token"]?.stringValue, !value.isEmpty else {
            throw .malformedResponse("no access_token string")
        }
        guard value.utf8.count <= maxLength else {
            throw .malformedResponse("access_token longer than \(maxLength) bytes")
        }
        // It becomes a header value: a CR, LF or other control byte would let the endpoint inject headers.
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformedResponse("access_token is not visible ASCII")
        }
        guard let type = object["token_type"]?.stringValue, type.lowercased() == "bearer" else {
            throw .malformedResponse("token_type is not Bearer")
        }
        guard let expiresIn = object["expires_in"]?.intValue, expiresIn > 0 else {
            throw .malformedResponse("expires_in is not a positive integer")
        }
        return AccessToken(value: value, expiresIn: min(expiresIn, maxExpiresIn))
    }

    private static func bounded(_ text: String) -> String {
        text.utf8.count <= maxDescriptionLength
            ? text : String(decoding: text.utf8.prefix(maxDescriptionLength), as: UTF8.self)
    }
}
