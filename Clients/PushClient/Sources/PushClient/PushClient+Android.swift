import Foundation

/// Android devices without Google services: UnifiedPush (a distributor app such as ntfy gives the app an endpoint on
/// a push server its user chose) and Huawei Push Kit (HMS Core gives the app a push token). Interests, the user,
/// reports and `stop()` work for them as for APNs, through the platform the device registered with.
///
/// ```swift
/// // UnifiedPush (android-connector 3.x): the VAPID key first, then onNewEndpoint
/// let vapid = try await push.vapidPublicKey()            // UnifiedPush.register(context, vapid = vapid)
/// try await push.start(unifiedPush: UnifiedPushSubscription(endpoint: url, p256dh: pubKey, auth: auth))
/// try await push.updateUnifiedPush(newSubscription)      // a later onNewEndpoint
/// // HMS Core: HmsInstanceId.getToken(appId, "HCM"), then onNewToken
/// try await push.start(hmsToken: token)
/// try await push.updateHMSToken(newToken)
/// ```
extension PushClient {
    /// The instance's VAPID public key (base64url), which a UnifiedPush app passes to its distributor when it
    /// registers (`UnifiedPush.register(…, vapid = key)`). Needs no registered device.
    public func vapidPublicKey() async throws -> String {
        let data = try await serially { client in try await client.instanceRequest("GET", "/web-vapid-public-key") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let key = object["vapidPublicKey"] as? String, !key.isEmpty else {
            throw PushClientError.badRequest("the answer is not {\"vapidPublicKey\"}")
        }
        return key
    }

    /// Registers the UnifiedPush endpoint and keys the distributor gave (call it from `onNewEndpoint` on first
    /// registration and on every launch). - Returns: the device id.
    @discardableResult
    public func start(unifiedPush subscription: UnifiedPushSubscription) async throws -> String {
        try Self.validate(subscription)
        return try await serially { client in try await client.register(.unifiedPush(subscription)) }
    }

    /// A distributor's new endpoint or keys for the registered UnifiedPush device (`onNewEndpoint` after the
    /// first): the device keeps its id, interests and user.
    public func updateUnifiedPush(_ subscription: UnifiedPushSubscription) async throws {
        try Self.validate(subscription)
        try await serially { client in try await client.replaceToken(with: .unifiedPush(subscription)) }
    }

    /// Registers the HMS push token (`HmsInstanceId.getToken` on every launch). - Returns: the device id.
    @discardableResult
    public func start(hmsToken: String) async throws -> String {
        try Self.validate(hmsToken: hmsToken)
        return try await serially { client in try await client.register(.hms(token: hmsToken)) }
    }

    /// HMS Core's `onNewToken` for the registered HMS device: the device keeps its id, interests and user.
    public func updateHMSToken(_ token: String) async throws {
        try Self.validate(hmsToken: token)
        try await serially { client in try await client.replaceToken(with: .hms(token: token)) }
    }

    /// The server's HMS token rule (1-512 printable ASCII characters, no spaces; Huawei says not to rely on a length).
    static func validate(hmsToken: String) throws {
        let bytes = hmsToken.utf8
        guard !bytes.isEmpty, bytes.count <= 512, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw PushClientError.invalidDeviceToken(String(hmsToken.prefix(140)))
        }
    }

    /// What can be checked before a request (the server resolves the host and checks the keys' encoding).
    static func validate(_ subscription: UnifiedPushSubscription) throws {
        guard let url = URL(string: subscription.endpoint), url.scheme == "https", url.host != nil,
              !subscription.p256dh.isEmpty, !subscription.auth.isEmpty else {
            throw PushClientError.invalidDeviceToken(String(subscription.endpoint.prefix(140)))
        }
    }
}
