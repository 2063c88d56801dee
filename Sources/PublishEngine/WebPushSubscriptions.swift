import JSON
import Locking
import WebPush

/// Parsed Web Push subscriptions by stored token, so that a browser's subscription is parsed once, not once per
/// publish: the JSON, the base64url keys, the endpoint URL and the P-256 point (an OpenSSL key) of a device that
/// every publish reaches are reused.
///
/// The store keeps a web device's token as the canonical JSON the device API wrote (`DeviceToken.web`); equal
/// tokens are the same subscription, so the token is the key (a token refresh is a new key; the old entry ages
/// out). Bounded: two generations of at most `capacity` entries each. A hit in the older one moves the entry
/// to the newer; when the newer is full it becomes the older and the oldest is dropped: O(1), no per-entry
/// bookkeeping, and an audience larger than the cache costs what it did before (one parse per device per
/// publish), never more memory.
package final class WebPushSubscriptions: Sendable {
    /// Entries per generation. An entry (the URL, the keys, an OpenSSL key) takes about 2.9 KB of heap (measured
    /// over 4,096 FCM-sized endpoints), so an instance's cache stays under ~24 MB however large its audience.
    static let defaultCapacity = 4096

    private struct Generations {
        var newer: [String: WebPushSubscription] = [:]
        var older: [String: WebPushSubscription] = [:]

        mutating func lookUp(_ token: String, capacity: Int) -> WebPushSubscription? {
            if let hit = newer[token] { return hit }
            guard let hit = older.removeValue(forKey: token) else { return nil }
            insert(hit, for: token, capacity: capacity)
            return hit
        }

        mutating func insert(_ subscription: WebPushSubscription, for token: String, capacity: Int) {
            if newer.count >= capacity {
                older = newer
                newer = [:]
            }
            newer[token] = subscription
        }
    }

    let capacity: Int
    private let state = Locked(Generations())

    package init(capacity: Int = WebPushSubscriptions.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// The subscription of a stored web token, parsed on its first use; nil when the token does not parse (it is
    /// not kept: a damaged row is rare, and is the device's fault, recorded per delivery).
    package func subscription(_ token: String) -> WebPushSubscription? {
        let capacity = capacity
        if let known = state.withLock({ $0.lookUp(token, capacity: capacity) }) { return known }
        guard let parsed = Self.parse(token) else { return nil }
        state.withLock { $0.insert(parsed, for: token, capacity: capacity) }
        return parsed
    }

    /// Entries held now (tests).
    package var count: Int { state.withLock { $0.newer.count + $0.older.count } }

    /// Parses a stored web token. The store's token column is bounded by the device API (4 KiB).
    package static func parse(_ token: String) -> WebPushSubscription? {
        guard let object = JSONValue.parse(Array(token.utf8))?.objectValue,
            let endpoint = object["endpoint"]?.stringValue, let keys = object["keys"]?.objectValue,
            let p256dh = keys["p256dh"]?.stringValue, let auth = keys["auth"]?.stringValue
        else { return nil }
        return try? WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }
}
