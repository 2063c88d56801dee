import HTTPClient

/// What a push service's answer means for the message and the subscription (RFC 8030 §5-§8 and the push
/// services' documented use of the codes).
package enum WebPushOutcome: Sendable, Equatable {
    /// 201 Created (RFC 8030 §5), or another 2xx: accepted, not necessarily delivered yet.
    case accepted(status: Int)
    /// 404 (expired, RFC 8030 §7.3) or 410 (unsubscribed): remove the subscription; never retry.
    case subscriptionGone(status: Int)
    /// 413: the body is too large for this push service. Final for this message; the subscription stays.
    case payloadTooLarge
    /// 429 or 5xx: retry later, not before `after` seconds when the service sent `Retry-After`.
    case retry(status: Int, after: Int?)
    /// 400 (malformed request), 401 (VAPID missing) or 403 (VAPID invalid, expired, wrong `aud`, or a key
    /// other than the subscription's `applicationServerKey`): our configuration or code is wrong, not the
    /// subscription. `detail` is the start of the body, printable ASCII only, for the operator.
    case configurationError(status: Int, detail: String)
    /// Anything else (1xx, 3xx, other 4xx): fail this message, keep the subscription.
    case unknown(status: Int)

    /// Longest `detail` kept from an error body.
    package static let maxDetailLength = 200

    /// Classifies an answer.
    ///
    /// - Parameters:
    ///   - retryAfter: the `Retry-After` header value, if any (delta-seconds or an HTTP-date).
    ///   - body: the answer's body (only its first `maxDetailLength` bytes are looked at).
    ///   - now: UNIX seconds, to turn an HTTP-date into a delay.
    package init(status: Int, retryAfter: String? = nil, body: [UInt8] = [], now: Int) {
        switch status {
        case 200...299: self = .accepted(status: status)
        case 404, 410: self = .subscriptionGone(status: status)
        case 413: self = .payloadTooLarge
        case 429, 500...599:
            self = .retry(status: status, after: retryAfter.flatMap { RetryAfter.seconds($0, now: now) })
        case 400, 401, 403: self = .configurationError(status: status, detail: Self.detail(body))
        default: self = .unknown(status: status)
        }
    }

    /// Whether the subscription must be deleted.
    package var removesSubscription: Bool {
        if case .subscriptionGone = self { return true }
        return false
    }

    /// Whether the message may be sent again later.
    package var isRetryable: Bool {
        if case .retry = self { return true }
        return false
    }

    private static func detail(_ body: [UInt8]) -> String {
        let bytes = body.prefix(maxDetailLength).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
        return String(decoding: bytes, as: UTF8.self)
    }
}
