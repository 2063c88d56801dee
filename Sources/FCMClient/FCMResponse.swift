import HTTPClient
import JSON

/// Classifies FCM HTTP v1 answers to `messages:send`.
package enum FCMResponse {
    /// Longest `error.message` kept.
    static let maxMessageLength = 512
    /// The `@type` of the detail that carries FCM's own code.
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    /// The `@type` of the detail that lists offending fields.
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    /// Classifies an answer.
    ///
    /// - Parameters:
    ///   - status: the HTTP status.
    ///   - retryAfter: the `Retry-After` header, if any.
    ///   - body: the response body.
    ///   - now: wall-clock UNIX seconds, for a `Retry-After` given as an HTTP date.
    package static func classify(status: Int, retryAfter: String?, body: [UInt8], now: Int) -> FCMSendResult {
        let json = try? JSONValue(parsing: body, limits: JSONLimits(maxDepth: 16, maxBytes: 64 * 1024))
        if status == 200 {
            guard let name = json?["name"]?.stringValue, !name.isEmpty else {
                return .unknown("200 without a message name")
            }
            return .sent(name: name)
        }
        let error = json?["error"]
        var info = FCMErrorInfo(
            httpStatus: status, status: error?["status"]?.stringValue, errorCode: nil,
            message: bounded(error?["message"]?.stringValue ?? ""))
        var tokenField = false
        for detail in error?["details"]?.arrayValue ?? [] {
            switch detail["@type"]?.stringValue {
            case fcmErrorType?: info.errorCode = detail["errorCode"]?.stringValue
            case badRequestType?:
                for violation in detail["fieldViolations"]?.arrayValue ?? []
                where violation["field"]?.stringValue == "message.token" {
                    tokenField = true
                }
            default: break
            }
        }
        let delay = retryAfter.flatMap { RetryAfter.seconds($0, now: now) }.map(Double.init)
        switch info.errorCode {
        case "UNREGISTERED"?: return .invalidToken(info)
        case "SENDER_ID_MISMATCH"?: return .senderMismatch(info)
        case "QUOTA_EXCEEDED"?, "UNAVAILABLE"?, "INTERNAL"?: return .retry(info, retryAfter: delay)
        case "THIRD_PARTY_AUTH_ERROR"?: return .authError(info)
        case "INVALID_ARGUMENT"?:
            return tokenField || mentionsToken(info.message) ? .invalidToken(info) : .invalidMessage(info)
        case let code? where !code.isEmpty: return .unknown("\(status) FCM error \(bounded(code))")
        default: break
        }
        // No FCM code: go by the canonical status, then by the HTTP status.
        switch (status, info.status) {
        case (_, "UNAUTHENTICATED"?), (401, nil): return .accessTokenRejected(info)
        case (_, "PERMISSION_DENIED"?), (403, nil): return .authError(info)
        case (_, "NOT_FOUND"?), (404, nil):
            return mentionsToken(info.message) ? .invalidToken(info) : .configuration(info)
        case (_, "INVALID_ARGUMENT"?), (400, nil):
            return tokenField || mentionsToken(info.message) ? .invalidToken(info) : .invalidMessage(info)
        case (_, "RESOURCE_EXHAUSTED"?), (429, nil), (_, "UNAVAILABLE"?), (503, nil), (_, "INTERNAL"?), (500, nil):
            return .retry(info, retryAfter: delay)
        default:
            return .unknown("\(status) \(info.status ?? "without a status")")
        }
    }

    /// FCM's words for a bad token: "The registration token is not a valid FCM registration token", "Requested
    /// entity was not found." is *not* one of them (that is a wrong project as often as a dead token).
    private static func mentionsToken(_ message: String) -> Bool {
        message.lowercased().contains("registration token")
    }

    private static func bounded(_ text: String) -> String {
        text.utf8.count <= maxMessageLength ? text : String(decoding: text.utf8.prefix(maxMessageLength), as: UTF8.self)
    }
}
