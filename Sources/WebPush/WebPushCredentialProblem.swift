import Foundation

/// A push service refusing the instance's VAPID credentials (`401`/`403`: no or a bad signature, an expired
/// token, a wrong `aud`, or a key other than the one the browser subscribed with): what `/ready` and the console
/// show per instance. The subscriptions are kept (the fault is the server's); it lasts until that push service
/// accepts a message.
package struct WebPushCredentialProblem: Sendable, Equatable {
    /// The push service's host (`fcm.googleapis.com`, `web.push.apple.com`, …).
    package var host: String
    /// The last refusal's status.
    package var status: Int
    /// The start of its body, printable ASCII (`{"reason":"BadJwtToken"}` from Apple).
    package var detail: String
    /// When this run of refusals began (wall clock).
    package var since: Date
    /// Consecutive refusals.
    package var count: Int

    package init(host: String, status: Int, detail: String, since: Date, count: Int) {
        self.host = host
        self.status = status
        self.detail = detail
        self.since = since
        self.count = count
    }
}

/// The current refusals per push-service host; pure, tested without sockets. Bounded: past `maxHosts` hosts,
/// a new host replaces the oldest problem (hosts come from the allowlist, so this stays small anyway).
struct WebPushCredentialTracker: Sendable, Equatable {
    static let maxHosts = 16
    private(set) var problems: [String: WebPushCredentialProblem] = [:]

    mutating func record(_ outcome: WebPushOutcome, host: String, now: Date) {
        switch outcome {
        case .accepted:
            problems[host] = nil
        case .configurationError(let status, let detail) where status == 401 || status == 403:
            if var current = problems[host] {
                current.count += 1
                current.status = status
                current.detail = detail
                problems[host] = current
                return
            }
            if problems.count >= Self.maxHosts, let oldest = problems.values.min(by: { $0.since < $1.since }) {
                problems[oldest.host] = nil
            }
            problems[host] = WebPushCredentialProblem(host: host, status: status, detail: detail, since: now, count: 1)
        default:
            break
        }
    }

    /// The problems, oldest first.
    var list: [WebPushCredentialProblem] { problems.values.sorted { ($0.since, $0.host) < ($1.since, $1.host) } }
}
