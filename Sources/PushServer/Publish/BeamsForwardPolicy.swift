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
enum BeamsForwardPolicy {
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
    static func outcome(kind: BeamsForwardKind, status: Int, body: [UInt8], retryAfter: String?, attempts: Int,
                        now: Date) -> BeamsForwardOutcome {
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
        guard attempts + 1 < maxAttempts else { return .failed(error: "\(error) (gave up after \(maxAttempts) attempts)") }
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

/// Beams' rate limit as the bridge keeps it, per Beams instance: at most `limit` requests in any `window` seconds,
/// and nothing before a `Retry-After` Beams gave. Beams allows 100 per second, then answers 429; the bridge counts
/// 100 per 1.2 s, because a request is counted when it is handed to the client and Beams counts it on arrival: a
/// first request that waited for its connection and a later one that did not would otherwise land within one
/// second of Beams' clock. Pure: times are monotonic seconds handed in.
struct BeamsRateWindow: Sendable {
    let limit: Int
    let window: Double
    private var sent: [Double] = []
    private var pausedUntil: Double = 0

    init(limit: Int = 100, window: Double = 1.2) {
        self.limit = limit
        self.window = window
    }

    /// Takes one request's room at `now`. - Returns: nil when taken, else how long to wait before asking again.
    mutating func take(now: Double) -> Double? {
        if now < pausedUntil { return pausedUntil - now }
        sent.removeAll { $0 <= now - window }
        guard sent.count < limit else { return max(0.001, sent[0] + window - now) }
        sent.append(now)
        return nil
    }

    /// Beams said to wait (429 with `Retry-After`): no request before `now + seconds`.
    mutating func pause(now: Double, seconds: Double) {
        pausedUntil = max(pausedUntil, now + seconds)
    }
}

/// The body the bridge forwards, and the same body the local publish is planned from (docs/MIGRATING.md,
/// migration.md §3.2): for a device that is still registered at both (the app has moved, Beams has not retired
/// it yet), a shared collapse id lets APNs show one of the two notifications and a shared Android `tag` lets the
/// second replace the first in the drawer. Values the publisher set are kept. Web is left alone: a browser holds
/// one subscription per service worker, so it cannot be registered at both.
enum BeamsBridgeBody {
    /// `body` with `apns.collapse_id`, `fcm.collapse_key` and (for a notification) `fcm.notification.tag` set to
    /// `publishID` where the publisher set none, serialized; the same bytes when nothing changes or it does not
    /// parse (the publish API refuses it then anyway).
    static func withCollapseIDs(_ body: [UInt8], publishID: String) -> [UInt8] {
        guard var root = JSONValue.parse(body)?.objectValue else { return body }
        var changed = false
        if var apns = root["apns"]?.objectValue, apns["collapse_id"] == nil {
            apns["collapse_id"] = .string(publishID)
            root["apns"] = .object(apns)
            changed = true
        }
        if var fcm = root["fcm"]?.objectValue {
            if fcm["collapse_key"] == nil {
                fcm["collapse_key"] = .string(publishID)
                changed = true
            }
            if var notification = fcm["notification"]?.objectValue, notification["tag"] == nil {
                notification["tag"] = .string(publishID)
                fcm["notification"] = .object(notification)
                changed = true
            }
            root["fcm"] = .object(fcm)
        }
        return changed ? JSONValue.object(root).serialized() : body
    }
}
