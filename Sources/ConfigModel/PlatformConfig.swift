import FCMClient
import HTTPClient
import WebPush

/// An instance's FCM HTTP v1 credentials (`instances[].fcm`). Without them the instance still accepts Android
/// devices; deliveries to them are reported as not sent, as for APNs without credentials.
package struct FCMInstanceConfig: Sendable {
    /// The Google service-account JSON key file (Firebase console: Project settings, Service accounts).
    package var serviceAccountFile: String
    /// The parsed file; its private key never appears in a description or log line.
    package var serviceAccount: ServiceAccount
    /// The project to send to: `projectId` from the config, else the file's `project_id`.
    package var projectID: String
    /// `endpointOverride`: where `messages:send` goes instead of `https://fcm.googleapis.com` (a staging proxy,
    /// the tests' stand-in). The access token still comes from the file's `token_uri`.
    package var endpointOverride: String? = nil
    /// `caFile`: a PEM CA bundle trusted instead of the system's, for FCM and the token endpoint.
    package var caFile: String? = nil

    package init(
        serviceAccountFile: String, serviceAccount: ServiceAccount, projectID: String,
        endpointOverride: String? = nil, caFile: String? = nil
    ) {
        self.serviceAccountFile = serviceAccountFile
        self.serviceAccount = serviceAccount
        self.projectID = projectID
        self.endpointOverride = endpointOverride
        self.caFile = caFile
    }
}

/// An instance's Web Push settings (`instances[].web`): the VAPID key pair (RFC 8292) browsers subscribe with,
/// the contact sent as the VAPID `sub`, and the origins whose pages may call the device and reporting APIs.
package struct WebInstanceConfig: Sendable {
    /// PEM file of the P-256 private key (`push-server vapid-keygen FILE` writes one).
    package var vapidKeyFile: String
    /// The loaded key pair; `keyPair.publicKeyBase64URL` is what `GET …/web-vapid-public-key` answers.
    package var keyPair: VAPIDKeyPair
    /// `mailto:` or `https:` contact, validated at start-up (Apple refuses placeholders).
    package var subject: VAPIDSubject
    /// Who may call the anonymous device and reporting APIs from a browser.
    package var allowedOrigins: CORSOrigins
    /// `pushServiceHosts`: hosts subscriptions may point at besides the known push services (FCM, Mozilla,
    /// Apple, Microsoft); `*.example.com` allows its subdomains. Endpoints come from anonymous browsers: any other
    /// host is refused (`DestinationRefused`) without a connection.
    package var pushServiceHosts: [WebPushHostAllowlist.Pattern] = []
    /// `allowedDestinations`: loopback, private, … addresses push requests may reach anyway (the webhooks'
    /// SSRF rules otherwise refuse them). Empty by default.
    package var allowedDestinations: [DestinationPolicy.Allowance] = []
    /// `caFile`: a PEM CA bundle trusted instead of the system's for push services.
    package var caFile: String? = nil

    package init(
        vapidKeyFile: String, keyPair: VAPIDKeyPair, subject: VAPIDSubject, allowedOrigins: CORSOrigins,
        pushServiceHosts: [WebPushHostAllowlist.Pattern] = [],
        allowedDestinations: [DestinationPolicy.Allowance] = [], caFile: String? = nil
    ) {
        self.vapidKeyFile = vapidKeyFile
        self.keyPair = keyPair
        self.subject = subject
        self.allowedOrigins = allowedOrigins
        self.pushServiceHosts = pushServiceHosts
        self.allowedDestinations = allowedDestinations
        self.caFile = caFile
    }
}

/// An instance's UnifiedPush settings (`instances[].unifiedpush`; docs/API.md "UnifiedPush", docs/SECURITY.md
/// "UnifiedPush endpoints"). Messages are signed with the instance's `web` VAPID key, which the app fetches from
/// `GET …/web-vapid-public-key` before it registers with its distributor; so `web` is required.
package struct UnifiedPushInstanceConfig: Sendable {
    /// `ports`: ports endpoints may use; 443 only by default.
    package var ports: Set<Int> = [443]
    /// `maxHosts`: distinct push-server hosts contacted within an hour, at most.
    package var maxHosts = 1000
    /// `maxInFlightPerHost`: notifications in flight to one host: what a slow or black-holed push server can hold
    /// of the instance's UnifiedPush window (`webPush.maxInFlight`).
    package var maxInFlightPerHost = 64
    /// `allowedDestinations`: loopback, private, … addresses endpoints may reach anyway. Empty by default; meant for
    /// tests and a push server on the operator's own network only (`check-config` warns while it is set).
    package var allowedDestinations: [DestinationPolicy.Allowance] = []
    /// `caFile`: a PEM CA bundle trusted instead of the system's for push servers (tests).
    package var caFile: String? = nil

    package init() {}
}

/// An instance's Huawei Push Kit credentials (`instances[].hms`; docs/OPERATIONS.md "Huawei Push Kit"). Without
/// them the instance still accepts HMS devices; deliveries to them are reported as not sent (`NoHMSCredentials`).
package struct HMSInstanceConfig: Sendable, CustomStringConvertible {
    /// `appId`: the app ID of AppGallery Connect, the `{id}` of the send URL.
    package var appID: String
    /// `clientId`: the OAuth 2.0 client ID; by default the app ID (apps created before separate OAuth credentials).
    package var clientID: String
    /// `clientSecret` or the contents of `clientSecretFile`; never logged.
    package var clientSecret: String
    /// `tokenEndpointOverride`: where the OAuth token is asked for instead of Huawei's (the tests' stand-in).
    package var tokenEndpointOverride: String? = nil
    /// `endpointOverride`: where `messages:send` goes instead of `https://push-api.cloud.huawei.com`.
    package var endpointOverride: String? = nil
    /// `caFile`: a PEM CA bundle trusted instead of the system's, for both endpoints.
    package var caFile: String? = nil

    package init(
        appID: String, clientID: String, clientSecret: String, tokenEndpointOverride: String? = nil,
        endpointOverride: String? = nil, caFile: String? = nil
    ) {
        self.appID = appID
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.tokenEndpointOverride = tokenEndpointOverride
        self.endpointOverride = endpointOverride
        self.caFile = caFile
    }

    /// The settings without the secret, for logs and dumps.
    package var description: String {
        "HMSInstanceConfig(appId: \(appID), clientId: \(clientID), clientSecret: <redacted>)"
    }
}

/// The origins a browser may call an instance's anonymous APIs from (`web.allowedOrigins`).
package enum CORSOrigins: Sendable, Equatable {
    /// `["*"]`, the default: any page. The SDK sends no cookies (`credentials: 'same-origin'` on another
    /// origin), so `Access-Control-Allow-Origin: *` grants nothing a non-browser client does not have anyway.
    case any
    /// Exact origins, lower-cased (`https://example.com`, `http://localhost:8080`).
    case only(Set<String>)

    /// Parses one configured origin: `*`, or `scheme://host[:port]` with scheme `http` or `https`, no path,
    /// no trailing slash (browsers send the `Origin` header in exactly that form). Returns the lower-cased
    /// origin, or why it is refused.
    package static func parse(_ text: String) -> Result<String, OriginError> {
        if text == "*" { return .success(text) }
        guard text.utf8.count <= 256 else { return .failure(.init("is longer than 256 bytes")) }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = lower.dropFirst("https://".count)
        } else if lower.hasPrefix("http://") {
            rest = lower.dropFirst("http://".count)
        } else {
            return .failure(.init("must be \"*\" or an origin such as https://app.example.com"))
        }
        var host = rest
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            let port = rest[rest.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number),
                port.utf8.allSatisfy({ (0x30...0x39).contains($0) })
            else { return .failure(.init("has an invalid port")) }
            host = rest[..<colon]
        }
        let allowed: (UInt8) -> Bool = { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
                || byte == UInt8(ascii: ":")
        }
        guard !host.isEmpty, host.utf8.allSatisfy(allowed) else {
            return .failure(.init("must be scheme://host[:port] with no path, query or trailing slash"))
        }
        return .success(lower)
    }

    package struct OriginError: Error, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }
}
