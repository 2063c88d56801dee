/// The push service a device is registered with: the `{platform}` segment of the device API's paths.
public enum PushPlatform: String, Codable, Sendable, CaseIterable {
    /// Apple Push Notification service (`start(deviceToken:environment:)`).
    case apns
    /// Huawei Push Kit, for Huawei phones without Google services (`start(hmsToken:)`).
    case hms
    /// UnifiedPush, for Android phones without Google services (`start(unifiedPush:)`).
    case unifiedpush
}

/// What a UnifiedPush distributor hands the app (android-connector 3.x `onNewEndpoint`: `PushEndpoint.url` and its
/// `pubKeySet`): the endpoint URL on the push server the user chose, and the keys messages to it are encrypted
/// with (RFC 8291), base64url as the connector gives them.
public struct UnifiedPushSubscription: Codable, Equatable, Sendable {
    /// `https://…`; the server refuses endpoints on private or loopback addresses and ports it does not allow.
    public var endpoint: String
    /// The P-256 public key (`pubKeySet.pubKey`).
    public var p256dh: String
    /// The 16-byte authentication secret (`pubKeySet.auth`).
    public var auth: String

    public init(endpoint: String, p256dh: String, auth: String) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// What a device registers with, per platform.
enum DeviceRegistration: Equatable, Sendable {
    case apns(token: String, environment: PushEnvironment)
    case hms(token: String)
    case unifiedPush(UnifiedPushSubscription)

    var platform: PushPlatform {
        switch self {
        case .apns: return .apns
        case .hms: return .hms
        case .unifiedPush: return .unifiedpush
        }
    }

    /// The registration (and `…/token` or `…/endpoint` update) body's platform part.
    var fields: [String: Any] {
        switch self {
        case .apns(let token, let environment): return ["token": token, "environment": environment.rawValue]
        case .hms(let token): return ["token": token]
        case .unifiedPush(let subscription):
            return ["endpoint": subscription.endpoint, "keys": ["p256dh": subscription.p256dh, "auth": subscription.auth]]
        }
    }
}

extension DeviceState {
    /// What the saved device was registered with (state saved before platforms existed is APNs).
    var registration: DeviceRegistration? {
        switch platform ?? .apns {
        case .apns:
            guard let deviceToken, let environment else { return nil }
            return .apns(token: deviceToken, environment: environment)
        case .hms:
            return deviceToken.map { .hms(token: $0) }
        case .unifiedpush:
            return unifiedPush.map { .unifiedPush($0) }
        }
    }

    /// Records `registration` as the device's.
    mutating func record(_ registration: DeviceRegistration) {
        platform = registration.platform
        switch registration {
        case .apns(let token, let environment):
            deviceToken = token
            self.environment = environment
            unifiedPush = nil
        case .hms(let token):
            deviceToken = token
            environment = nil
            unifiedPush = nil
        case .unifiedPush(let subscription):
            deviceToken = nil
            environment = nil
            unifiedPush = subscription
        }
    }
}
