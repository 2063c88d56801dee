import PushStore

/// One Beams instance: its secret and its credentials per platform (APNs, FCM, Web Push).
package struct InstanceConfig: Sendable {
    /// A UUID, as Beams instance ids are (the iOS SDK refuses anything else).
    package var id: String
    /// The secret key backends send as `Authorization: Bearer …`; also the HS256 key for user tokens.
    package var secretKey: String
    package var apns: APNsInstanceConfig?
    /// Instance-level webhooks (`v1.PublishToUsersAttempt`, …), optional.
    package var webhook: WebhookConfig?
    /// FCM credentials for Android devices, optional.
    package var fcm: FCMInstanceConfig? = nil
    /// Web Push (VAPID key, subject, allowed browser origins), optional.
    package var web: WebInstanceConfig? = nil
    /// UnifiedPush (open endpoints, signed with `web`'s VAPID key), optional.
    package var unifiedpush: UnifiedPushInstanceConfig? = nil
    /// Huawei Push Kit (OAuth client credentials), optional.
    package var hms: HMSInstanceConfig? = nil
    /// Local-time and throttling defaults for the instance's publishes (`x_delivery`).
    package var delivery = InstanceDeliveryConfig()
    /// The instance's share of the node's publish slots when instances wait for them: this many grants per turn of
    /// the round robin (`PublishSlotScheduler`).
    package var publishWeight = 1
    /// The Beams bridge while devices move from Pusher Beams (docs/MIGRATING.md), optional.
    package var beamsBridge: BeamsBridgeConfig? = nil
    /// Devices, publishes per day and provider budgets (`InstanceQuotas`); none by default.
    package var quotas = InstanceQuotas()
    /// What the Beams secret may do (`beamsSecretScopes`); default: everything, as on Beams. Scoped keys are not
    /// affected; user tokens are verified with the Beams secret whatever this says.
    package var beamsSecretScopes: Set<APIKeyScope> = APIKeyScope.all

    /// The browser origins allowed on the anonymous APIs: `web.allowedOrigins`, any origin without a `web` section.
    package var allowedOrigins: CORSOrigins { web?.allowedOrigins ?? .any }

    package init(
        id: String, secretKey: String, apns: APNsInstanceConfig? = nil, webhook: WebhookConfig? = nil,
        fcm: FCMInstanceConfig? = nil, web: WebInstanceConfig? = nil
    ) {
        self.id = id
        self.secretKey = secretKey
        self.apns = apns
        self.webhook = webhook
        self.fcm = fcm
        self.web = web
    }
}

/// APNs credentials for one instance. Missing credentials are allowed: the instance still accepts devices and
/// publishes, and reports deliveries as not sent.
package struct APNsInstanceConfig: Sendable {
    package var teamID: String
    package var keyID: String
    package var keyPath: String
    /// The app's bundle id; push-type suffixes are added to it.
    package var topic: String
    /// The environment of devices that register without declaring one.
    package var defaultEnvironment: PushEnvironment
    /// Test-only override: send to this base URL (e.g. the mock APNs) instead of Apple.
    package var endpointOverride: String?
    /// CA bundle for `endpointOverride`.
    package var caFile: String?
    /// Certificate authentication instead of the `.p8` key (`apns.certificate`), loaded and checked.
    package var certificate: APNsCertificateConfig? = nil
    /// Broadcast channel settings (`broadcast`); nil: the defaults.
    package var broadcast: APNsBroadcastConfig? = nil

    /// Whether credentials are present (team, key id and key path all set, or a certificate).
    package var hasCredentials: Bool { certificate != nil || (!teamID.isEmpty && !keyID.isEmpty && !keyPath.isEmpty) }
    /// Whether push types APNs accepts only with token authentication (`liveactivity`, `location`) can be sent:
    /// false with a certificate, so intake can refuse such publishes up front (the client refuses them anyway).
    package var supportsTokenOnlyPushTypes: Bool { certificate == nil }

    package init(
        teamID: String, keyID: String, keyPath: String, topic: String, defaultEnvironment: PushEnvironment,
        endpointOverride: String? = nil, caFile: String? = nil, certificate: APNsCertificateConfig? = nil,
        broadcast: APNsBroadcastConfig? = nil
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.keyPath = keyPath
        self.topic = topic
        self.defaultEnvironment = defaultEnvironment
        self.endpointOverride = endpointOverride
        self.caFile = caFile
        self.certificate = certificate
        self.broadcast = broadcast
    }
}

/// An instance's webhook receiver (`instances[].webhook`).
package struct WebhookConfig: Sendable {
    /// An http or https URL (checked with `HTTPURL`).
    package var url: String
    /// HMAC-SHA1 key for the `Webhook-Signature` header; required, from `secret`, `secretEnv` or `secretFile`.
    /// Also the HMAC-SHA256 key of the Standard Webhooks `webhook-signature` of `device.invalidated` events.
    package var secret: String
    /// `invalidationsUrl`: where `device.invalidated` events go (docs/API.md "Device invalidations"); nil: none
    /// are sent (the pull feed still lists them).
    package var invalidationsURL: String? = nil

    package init(url: String, secret: String, invalidationsURL: String? = nil) {
        self.url = url
        self.secret = secret
        self.invalidationsURL = invalidationsURL
    }
}

/// An instance's defaults and bounds for `x_delivery` (docs/API.md): the zone of devices that set none, and the
/// pace of its publishes.
package struct InstanceDeliveryConfig: Sendable, Equatable {
    /// IANA zone of devices without a time zone, for `deliverAtLocalTime`.
    package var defaultTimeZone = "UTC"
    /// `throttlePerMinute` of publishes that give none; nil: unthrottled.
    package var defaultThrottlePerMinute: Int?
    /// The highest `throttlePerMinute` a publish may ask for; nil: `DeliveryOptions.maxThrottlePerMinute`.
    package var maxThrottlePerMinute: Int?
    package init() {}
}

/// An instance's broadcast channel settings (`instances[].apns.broadcast`, iOS 18 broadcast push). Apple's
/// management host is documented; the send host is not settled (docs/APNS.md "Broadcast channels"), so both are
/// configurable.
package struct APNsBroadcastConfig: Sendable, Equatable {
    /// Most channels one broadcast publish may name, by default.
    package static let defaultMaxChannelsPerPublish = 100
    /// Upper bound of `maxChannelsPerPublish`.
    package static let maxChannelsPerPublishLimit = 1000

    /// `environment`: which APNs environment the channels live in (they never cross environments); nil: the
    /// instance's `defaultEnvironment`.
    package var environment: PushEnvironment?
    /// `managementUrl`: the channel management API base URL; nil: the `endpointOverride`, else Apple's host for
    /// the environment (`api-manage-broadcast[.sandbox].push.apple.com:2196|2195`).
    package var managementURL: String?
    /// `sendUrl`: where `POST /4/broadcasts/apps/<bundle>` goes; nil: the `endpointOverride`, else
    /// `api-broadcast[.sandbox].push.apple.com`.
    package var sendURL: String?
    /// `maxChannelsPerPublish`: channels one publish may name.
    package var maxChannelsPerPublish = APNsBroadcastConfig.defaultMaxChannelsPerPublish

    package init() {}
}
