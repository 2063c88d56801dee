import APNsClient
import ConfigModel
import FCMClient
import HTTPClient
import JWTSigner
import PushStore
import WebPush

/// An instance's configuration with its credentials loaded (the `.p8` key, the FCM service account and the VAPID
/// key are read once at start-up).
package struct InstanceRuntime: Sendable {
    package let config: InstanceConfig
    /// nil when the instance has no APNs credentials: its deliveries are recorded as not sent.
    package let credentials: APNsCredentials?
    /// The instance's FCM sender (one per service account: its access token, its window); nil when the instance
    /// has no `fcm` section: deliveries to its Android devices are recorded as not sent (`NoFCMCredentials`).
    package let fcm: (any FCMSending)?
    /// The instance's Web Push sender (its VAPID key, its window); nil when the instance has no `web` section:
    /// deliveries to its browsers are recorded as not sent (`NoWebPushCredentials`).
    package let web: (any WebPushSending)?
    /// The instance's streaks of unanswered Web Push deliveries, which invalidate a subscription
    /// (`UnreachableSubscriptions`); nil without a Web Push sender.
    package let unreachableWeb: UnreachableSubscriptions?
    /// The instance's parsed Web Push subscriptions (`WebPushSubscriptions`); nil without a Web Push sender.
    package let webSubscriptions: WebPushSubscriptions?
    /// The instance's UnifiedPush sender: a second Web Push sender with open endpoints (any public host on an
    /// allowed port, a share of its window per host), signing with the same VAPID key; nil without `unifiedpush`.
    package let unifiedpush: (any WebPushSending)?
    /// The UnifiedPush twin of `unreachableWeb`.
    package let unreachableUnifiedPush: UnreachableSubscriptions?
    /// The UnifiedPush twin of `webSubscriptions`.
    package let unifiedPushSubscriptions: WebPushSubscriptions?
    /// The instance's Huawei Push Kit sender (its OAuth token, its batches); nil without an `hms` section.
    package var hms: HMSSender? = nil
    /// When the senders close (`SenderRetirement`), shared by every copy of this runtime.
    package let lifetime = SenderLifetime()
    /// How long retired senders get to finish what they hold once the last run using them ended.
    static let retiredGracePeriod: Duration = .seconds(5)

    /// - Parameters:
    ///   - senders: how to build the instance's FCM and Web Push senders; nil builds none (commands that only
    ///     read the configuration or send through APNs).
    /// - Throws: `KeyLoadError` when the configured key cannot be used (check-config reports the same), or an
    ///   `FCMSenderError`/`CurlError` when a sender cannot be set up.
    package init(config: InstanceConfig, senders: PlatformSenderSettings? = nil) throws {
        self.config = config
        if let certificate = config.apns?.certificate {
            credentials = APNsCredentials(certificate: certificate.identity)
        } else if let apns = config.apns, apns.hasCredentials {
            let key = try ES256PrivateKey(contentsOfFile: apns.keyPath)
            credentials = APNsCredentials(teamID: apns.teamID, keyID: apns.keyID, key: key)
        } else {
            credentials = nil
        }
        if let senders, let fcm = config.fcm {
            var configuration = senders.fcm
            if let endpoint = fcm.endpointOverride { configuration.baseURL = endpoint }
            if let caFile = fcm.caFile { configuration.caFile = caFile }
            // `projectId` from the config, else the file's `project_id` (resolved when the config was loaded).
            configuration.projectID = fcm.projectID
            self.fcm = try FCMSender(account: fcm.serviceAccount, configuration: configuration)
        } else {
            fcm = nil
        }
        if let senders, let web = config.web {
            var configuration = senders.web
            configuration.allowedHosts.patterns += web.pushServiceHosts
            configuration.policy = DestinationPolicy(allowances: web.allowedDestinations)
            if let caFile = web.caFile { configuration.caFile = caFile }
            let vapid = VAPIDAuthorizer(keyPair: web.keyPair, subject: web.subject)
            self.web = try WebPushSender(vapid: vapid, configuration: configuration)
            unreachableWeb = UnreachableSubscriptions(
                failures: senders.unreachableAfterFailures,
                seconds: senders.unreachableAfterSeconds)
            webSubscriptions = WebPushSubscriptions()
        } else {
            web = nil
            unreachableWeb = nil
            webSubscriptions = nil
        }
        if let senders, let web = config.web, let settings = config.unifiedpush {
            var configuration = senders.web
            configuration.openEndpoints = WebPushOpenEndpoints(ports: settings.ports, maxHosts: settings.maxHosts)
            configuration.windowPerService = min(settings.maxInFlightPerHost, configuration.window)
            configuration.policy = DestinationPolicy(allowances: settings.allowedDestinations)
            configuration.caFile = settings.caFile ?? configuration.caFile
            configuration.logger = configuration.logger.named("unifiedpush")
            let vapid = VAPIDAuthorizer(keyPair: web.keyPair, subject: web.subject)
            unifiedpush = try WebPushSender(vapid: vapid, configuration: configuration)
            unifiedPushSubscriptions = WebPushSubscriptions()
            unreachableUnifiedPush = UnreachableSubscriptions(
                failures: senders.unreachableAfterFailures,
                seconds: senders.unreachableAfterSeconds)
        } else {
            unifiedpush = nil
            unreachableUnifiedPush = nil
            unifiedPushSubscriptions = nil
        }
        if senders != nil, let settings = config.hms {
            var configuration = HMSSenderConfiguration(
                clientID: settings.clientID, clientSecret: settings.clientSecret,
                appID: settings.appID)
            if let url = settings.tokenEndpointOverride { configuration.oauthURL = url }
            if let url = settings.endpointOverride { configuration.pushBaseURL = url }
            configuration.caFile = settings.caFile
            hms = try HMSSender(configuration: configuration)
        }
    }

    /// An instance with credentials already at hand (engine tests, whose sender never signs).
    init(
        config: InstanceConfig, credentials: APNsCredentials?, fcm: (any FCMSending)? = nil,
        web: (any WebPushSending)? = nil, unifiedpush: (any WebPushSending)? = nil
    ) {
        self.config = config
        self.credentials = credentials
        self.fcm = fcm
        self.web = web
        self.unifiedpush = unifiedpush
        unreachableWeb = nil
        webSubscriptions = web == nil ? nil : WebPushSubscriptions()
        unreachableUnifiedPush = nil
        unifiedPushSubscriptions = unifiedpush == nil ? nil : WebPushSubscriptions()
    }

    /// Holds the senders for a publish run (`release()` when it ends). - Returns: false once they are retired: take
    /// the served runtime instead (`InstanceDirectory.hold`).
    func hold() -> Bool { lifetime.hold() }

    /// A run that held the senders ended: the last one out of retired senders closes them.
    package func release() { lifetime.release(close: closer) }

    /// The directory no longer serves these senders: they close now when no run holds them, else when the last
    /// one ends.
    func retire() { lifetime.retire(close: closer) }

    /// Shutdown: closes the senders unless they were closed before (then waits for that close to end).
    /// - Returns: how many notifications got no answer.
    package func closeAtShutdown(gracePeriod: Duration) async -> Int {
        await lifetime.shutDown { await self.shutdownSenders(gracePeriod: gracePeriod) }
    }

    private var closer: @Sendable () async -> Int {
        let runtime = self
        return { await runtime.shutdownSenders(gracePeriod: Self.retiredGracePeriod) }
    }

    /// Stops the instance's FCM and Web Push senders (APNs has one sender for all instances).
    /// - Returns: how many notifications got no answer.
    func shutdownSenders(gracePeriod: Duration) async -> Int {
        async let fcmUnanswered = fcm?.shutdown(gracePeriod: gracePeriod).count ?? 0
        async let webUnanswered = web?.shutdown(gracePeriod: gracePeriod).count ?? 0
        async let unifiedPushUnanswered = unifiedpush?.shutdown(gracePeriod: gracePeriod).count ?? 0
        await hms?.shutdown()
        return await fcmUnanswered + webUnanswered + unifiedPushUnanswered
    }

    /// Where a device of `environment` is sent: Apple's host, or the configured override (tests, staging).
    package func apnsEnvironment(_ environment: PushEnvironment) -> APNsEnvironment {
        if let override = config.apns?.endpointOverride {
            return .custom(url: override, caFile: config.apns?.caFile)
        }
        return environment == .sandbox ? .sandbox() : .production()
    }
}

/// How instances' FCM and Web Push senders are built: the transport settings every instance shares (each
/// instance brings its own credentials and gets its own sender, window and access-token cache).
package struct PlatformSenderSettings: Sendable {
    package var fcm = FCMSenderConfiguration()
    package var web = WebPushSenderConfiguration()
    /// Unanswered Web Push deliveries in a row that invalidate a subscription, and the least time they must span.
    package var unreachableAfterFailures = 3
    package var unreachableAfterSeconds = 3600.0
    package init() {}
}
