import APNsClient
import JWTSigner
import PushStore
import WebPush

/// An instance's configuration with its credentials loaded (the `.p8` key, the FCM service account and the VAPID
/// key are read once at start-up).
struct InstanceRuntime: Sendable {
    let config: InstanceConfig
    /// nil when the instance has no APNs credentials: its deliveries are recorded as not sent.
    let credentials: APNsCredentials?
    /// nil when the instance has no `fcm` section: deliveries to its Android devices are recorded as not sent
    /// (`NoFCMCredentials`).
    var fcm: FCMAccount?
    /// Signs VAPID tokens with the instance's key pair; nil when the instance has no `web` section: deliveries to
    /// its browsers are recorded as not sent (`NoWebPushCredentials`).
    var vapid: VAPIDAuthorizer?

    /// - Throws: `KeyLoadError` when the configured key cannot be used (check-config reports the same).
    init(config: InstanceConfig) throws {
        self.config = config
        if let apns = config.apns, apns.hasCredentials {
            let key = try ES256PrivateKey(contentsOfFile: apns.keyPath)
            credentials = APNsCredentials(teamID: apns.teamID, keyID: apns.keyID, key: key)
        } else {
            credentials = nil
        }
    }

    /// An instance with credentials already at hand (engine tests, whose sender never signs).
    init(config: InstanceConfig, credentials: APNsCredentials?, fcm: FCMAccount? = nil, vapid: VAPIDAuthorizer? = nil) {
        self.config = config
        self.credentials = credentials
        self.fcm = fcm
        self.vapid = vapid
    }

    /// Where a device of `environment` is sent: Apple's host, or the configured override (tests, staging).
    func apnsEnvironment(_ environment: PushEnvironment) -> APNsEnvironment {
        if let override = config.apns?.endpointOverride {
            return .custom(url: override, caFile: config.apns?.caFile)
        }
        return environment == .sandbox ? .sandbox() : .production()
    }
}
