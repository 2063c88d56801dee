import Foundation
import HTTPClient
import JSON
import PushStore

/// What the Beams bridge does with Beams' answer to a forward (docs/MIGRATING.md "The bridge"), as pure functions:
/// Beams' statuses and limits are in docs/BEAMS-PROTOCOL.md §2 and §8.
///
/// - 200: done; a publish's `publishId` is kept. A retirement's 404 is done too (the device is gone already).
/// - 429 and 5xx, and no answer at all: retried after `max(Retry-After, backoff)`, the backoff doubling from 1 s
///   to at most 300 s, `maxAttempts` attempts in all; then failed.
/// - Anything else (400 malformed or too large, 401 wrong secret, 402 over the plan, 403, 404, 413, 422): failed
///   at once with Beams' `error` and `description`: sending the same body again cannot change the answer.
package enum BeamsForwardPolicy {
    /// Attempts before a retried forward is given up (about 17 minutes of backoff without `Retry-After`).
    static let maxAttempts = 10
    /// The longest backoff step.
    static let maxBackoff: TimeInterval = 300
    /// Beams' body limits: 10 KiB to interests, 200 KiB to users (docs/BEAMS-PROTOCOL.md §8). A larger body is
    /// not sent (Beams would answer 400 "Request body size is too large").
    static let maxInterestsBody = 10 * 1024
    static let maxUsersBody = 200 * 1024

    /// Why a forward's body cannot be sent, if it cannot.
    static func sizeProblem(_ forward: BeamsForward) -> String? {
        let limit: Int
        switch forward.kind {
        case .publishInterests: limit = maxInterestsBody
        case .publishUsers: limit = maxUsersBody
        case .retireDevice: return nil
        }
        guard forward.body.count > limit else { return nil }
        return "body_too_large: \(forward.body.count) bytes is over Beams' \(limit / 1024) KiB limit for "
            + "\(forward.kind == .publishUsers ? "users" : "interests") publishes; not sent"
    }

    /// The backoff before attempt `attempts + 1` (attempts made so far: 1 → 1 s, 2 → 2 s, …, capped).
    static func backoff(attempts: Int) -> TimeInterval {
        min(maxBackoff, pow(2, Double(max(0, min(attempts, 16) - 1))))
    }

    /// The outcome of an answered attempt. `attempts` counts earlier attempts; `now` is wall time.
    static func outcome(
        kind: BeamsForwardKind, status: Int, body: [UInt8], retryAfter: String?, attempts: Int,
        now: Date
    ) -> BeamsForwardOutcome {
        if (200..<300).contains(status) {
            let upstream = JSONValue.parse(body)?.objectValue?["publishId"]?.stringValue
            return .delivered(upstreamID: kind.isPublish ? upstream : nil)
        }
        if kind == .retireDevice && status == 404 { return .delivered(upstreamID: nil) }
        let described = "HTTP \(status)" + (description(body).map { ": \($0)" } ?? "")
        guard status == 429 || (500..<600).contains(status) else { return .failed(error: described) }
        var delay = backoff(attempts: attempts + 1)
        if let retryAfter, let seconds = RetryAfter.seconds(retryAfter, now: Int(now.timeIntervalSince1970)) {
            delay = max(delay, TimeInterval(seconds))
        }
        return retry(attempts: attempts, error: described, delay: delay, now: now)
    }

    /// The outcome of an attempt that got no answer (connection refused, timeout, TLS).
    static func outcome(transportError: String, attempts: Int, now: Date) -> BeamsForwardOutcome {
        retry(attempts: attempts, error: transportError, delay: backoff(attempts: attempts + 1), now: now)
    }

    private static func retry(attempts: Int, error: String, delay: TimeInterval, now: Date) -> BeamsForwardOutcome {
        guard attempts + 1 < maxAttempts else {
            return .failed(error: "\(error) (gave up after \(maxAttempts) attempts)")
        }
        return .retry(at: now.addingTimeInterval(delay), error: error)
    }

    /// Beams' `{"error", "description"}` as one line, at most 300 characters.
    static func description(_ body: [UInt8]) -> String? {
        guard let object = JSONValue.parse(body)?.objectValue else { return nil }
        let parts = [object["error"]?.stringValue, object["description"]?.stringValue].compactMap { $0 }
        guard !parts.isEmpty else { return nil }
        return String(parts.joined(separator: ": ").prefix(300))
    }
}
