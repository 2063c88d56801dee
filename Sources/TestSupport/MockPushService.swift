import Foundation
import JSON

/// Launches the strict Web Push service stand-in (`Tests/Support/mock_push_service.py`: VAPID checks, and each
/// message decrypted with the subscription's private key by independent Python code) and drives its control API.
///
/// ```swift
/// let mock = try MockPushService.start()
/// defer { mock.stop() }
/// let subscription = try mock.createSubscription()   // endpoint https://127.0.0.1:<port>/push/<id>
/// // … send; then:
/// let messages = try mock.messages(subscription: subscription.id)   // plaintext the "browser" read
/// ```
package final class MockPushService: Sendable {
    /// A subscription the stand-in created (its browser side holds the private key).
    package struct Subscription: Sendable {
        package let id: String
        package let endpoint: String
        package let p256dh: String
        package let auth: String
    }

    package let process: MockProcess
    /// `https://127.0.0.1:<port>`: the VAPID `aud` the stand-in demands.
    package let origin: String
    package let caFile: String

    private init(process: MockProcess) {
        self.process = process
        origin = process.string("origin")
        caFile = process.string("ca_file")
    }

    /// Starts the stand-in; `vapidKey` (base64url public key) pins the key every request must be signed with.
    package static func start(vapidKey: String? = nil, extraArguments: [String] = []) throws(MockAPNsError)
        -> MockPushService
    {
        var arguments = extraArguments
        if let vapidKey { arguments += ["--vapid-key", vapidKey] }
        return MockPushService(process: try MockProcess(script: "mock_push_service.py", arguments: arguments))
    }

    /// A new subscription; `marker` scripts its answers (`gone-404`, `gone-410`, `too-large`, `rate-limited`,
    /// `unavailable`), `retryAfter` the `Retry-After` sent with 429/503.
    /// - Parameters:
    ///   - flavour: the push server the subscription's endpoint belongs to: `webpush` (default), or the
    ///     UnifiedPush servers `ntfy`, `nextpush`, `autopush` (Tests/Support/README.md).
    ///   - applicationServerKey: the VAPID public key (base64url) this subscription's requests must be signed with,
    ///     instead of the one given to `start` (several instances, each with its own key, on one stand-in).
    package func createSubscription(
        marker: String? = nil, retryAfter: String? = nil, flavour: String? = nil, applicationServerKey: String? = nil
    ) throws(MockAPNsError) -> Subscription {
        var body: [String: JSONValue] = [:]
        if let applicationServerKey { body["application_server_key"] = .string(applicationServerKey) }
        if let flavour { body["flavour"] = .string(flavour) }
        if let marker { body["marker"] = .string(marker) }
        if let retryAfter { body["retry_after"] = .string(retryAfter) }
        let answer = try process.call("POST", "/subscriptions", body: .object(body))
        guard let id = answer["id"]?.stringValue, let endpoint = answer["endpoint"]?.stringValue,
            let p256dh = answer["p256dh"]?.stringValue, let auth = answer["auth"]?.stringValue
        else { throw .decoding(request: "POST /subscriptions", detail: "missing id/endpoint/p256dh/auth") }
        return Subscription(id: id, endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// Accepted (decrypted) messages, oldest first: `seq, subscription, plaintext, ttl, urgency, topic, vapid, …`.
    package func messages(subscription: String? = nil) throws(MockAPNsError) -> [JSONValue] {
        let path = subscription.map { "/messages?subscription=\($0)" } ?? "/messages"
        return try process.call("GET", path).arrayValue ?? []
    }

    /// Every request with its `status` and `reason`, oldest first.
    package func requests() throws(MockAPNsError) -> [JSONValue] {
        try process.call("GET", "/requests").arrayValue ?? []
    }

    package func stop() { process.stop() }
}
