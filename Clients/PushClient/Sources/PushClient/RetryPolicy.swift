import Foundation

/// The Beams iOS SDK's retry rules (push-notifications-swift 4.0.0, `WithInfiniteExpBackoff`), as a pure function
/// of a response: which answers end a call, which are retried, and how long to wait before the next attempt.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts before giving up; nil retries forever, as the SDK does (cancel the calling task to stop).
    public var maxAttempts: Int?
    /// The delay before retry `n` is `min(maxDelay, baseDelay * 2^n)`: 0.4 s, 0.8 s, … 64 s with the defaults.
    public var baseDelay: TimeInterval
    public var maxDelay: TimeInterval

    public init(maxAttempts: Int? = nil, baseDelay: TimeInterval = 0.2, maxDelay: TimeInterval = 64) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The SDK's policy: forever, 0.2 s doubling, capped at 64 s.
    public static let sdk = RetryPolicy()

    /// What to do with one answer.
    public enum Decision: Equatable, Sendable {
        case success
        /// Network failure, 5xx, 429 and every other status the SDK does not single out: wait and try again.
        case retry
        /// 404: the server forgot the device; register again and replay the call.
        case deviceNotFound
        /// Retrying cannot help.
        case fail(PushClientError)
    }

    /// - Parameters:
    ///   - status: the HTTP status, or nil when no answer arrived (connection refused, timeout, TLS).
    ///   - description: the `description` of the error body, if any.
    public static func decide(status: Int?, description: String?) -> Decision {
        guard let status else { return .retry }
        let text = description ?? "Unknown API error"
        switch status {
        case 200..<300:
            return .success
        case 400:
            return .fail(.badRequest(text))
        case 401, 403:
            // The SDK's rule: the server names the device token when it refuses the APNs token.
            return .fail(text.contains("device token") ? .badDeviceToken(text) : .unauthorized(text))
        case 404:
            return .deviceNotFound
        default:
            return text == "Device could not be created" ? .fail(.couldNotCreateDevice) : .retry
        }
    }

    /// Seconds to wait before retry number `retry` (1 for the first retry).
    public func delay(beforeRetry retry: Int) -> TimeInterval {
        let exponent = Double(min(max(retry, 0), 64))
        return min(maxDelay, baseDelay * pow(2, exponent))
    }
}
