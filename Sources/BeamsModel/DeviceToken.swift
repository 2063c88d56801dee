import HTTPClient
import JSON
import JWTSigner
import PushStore
import WebPush

/// The token a device registers with, checked and put in the one form the store keys devices by (so that the same
/// phone or browser subscription always maps to the same device). Tokens come from anonymous clients: every check
/// bounds the length before looking at the bytes, and no error echoes more than a length.
public enum DeviceToken {
    /// APNs tokens are stored as lower-case hex; Apple says not to assume their length, so any even length from 16
    /// to 400 hex digits is accepted. The description mentions "device token" so the iOS SDK stops retrying.
    package static func apns(_ token: String) throws(BeamsError) -> String {
        let lower = token.lowercased()
        let isHex = lower.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        guard isHex, lower.utf8.count % 2 == 0, (16...400).contains(lower.utf8.count) else {
            throw BeamsError.invalidToken
        }
        return lower
    }

    /// Longest FCM registration token accepted. Real ones are about 160 characters; Google sets no documented
    /// limit, so this only bounds what an anonymous client may store.
    package static let maxFCMTokenBytes = 4096
    /// Shortest FCM registration token accepted.
    static let minFCMTokenBytes = 8

    /// FCM registration tokens are opaque (docs/API.md): kept as sent when they are 8-4096 printable ASCII
    /// characters with no space. Anything else, and a Firebase *installation auth token* (a JWT, `eyJ….….…`, which
    /// SDKs before 1.9.2 sent by mistake), gets 400 `InvalidToken`: the one answer on which the Android SDK fetches
    /// a fresh registration token and registers again instead of retrying the same body forever.
    package static func fcm(_ token: String) throws(BeamsError) -> String {
        let bytes = token.utf8
        guard (minFCMTokenBytes...maxFCMTokenBytes).contains(bytes.count) else {
            throw BeamsError.invalidFCMToken("must be \(minFCMTokenBytes) to \(maxFCMTokenBytes) characters long")
        }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw BeamsError.invalidFCMToken("must be printable ASCII without spaces")
        }
        if isJWT(token) {
            throw BeamsError.invalidFCMToken("is a Firebase installation auth token (a JWT), not a registration token")
        }
        return token
    }

    /// Three non-empty base64url segments with a JSON header (`eyJ` is the encoding of `{"`).
    private static func isJWT(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].hasPrefix("eyJ") else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && (try? Base64URL.decode(part)) != nil
        }
    }

    /// Longest web token accepted: base64 of a subscription whose endpoint is at most 2048 bytes.
    static let maxWebTokenBytes = 4096

    /// The Web SDK's token: base64 (`btoa`, standard alphabet and padded; the URL-safe alphabet and missing
    /// padding are accepted too) of `JSON.stringify(PushSubscription)`. The subscription is validated
    /// (`WebPushSubscription`: https endpoint, a P-256 point, a 16-byte auth secret) and stored canonically:
    /// `{"endpoint":…,"keys":{"auth":…,"p256dh":…}}` with sorted members and unpadded base64url keys, without
    /// `expirationTime` (browsers report it inconsistently), so one subscription is always one device.
    ///
    /// The endpoint must also be one the sender would contact: a host (and port) of `hosts` (the port rule: 443
    /// unless the pattern names another), and, for a literal address, one `policy` allows. Anything else (a cloud
    /// metadata address, loopback, an internal name) is refused here with the same 400: nothing is stored, and
    /// the Web SDK's `start()` rejects, so the page's next `start()` subscribes again.
    package static func web(
        _ token: String, hosts: WebPushHostAllowlist = .knownPushServices,
        policy: DestinationPolicy = DestinationPolicy()
    ) throws(BeamsError) -> String {
        guard token.utf8.count <= maxWebTokenBytes else {
            throw BeamsError.invalidWebToken("the token is longer than \(maxWebTokenBytes) bytes")
        }
        guard let json = decodeBase64(token) else {
            throw BeamsError.invalidWebToken("the token is not base64 of the subscription JSON")
        }
        guard
            let object = JSONValue.parse(json, limits: JSONLimits(maxDepth: 4, maxBytes: maxWebTokenBytes))?.objectValue
        else { throw BeamsError.invalidWebToken("the token does not decode to a JSON object") }
        guard let endpoint = object["endpoint"]?.stringValue else {
            throw BeamsError.invalidWebToken("the subscription has no endpoint string")
        }
        guard let keys = object["keys"]?.objectValue, let p256dh = keys["p256dh"]?.stringValue,
            let auth = keys["auth"]?.stringValue
        else { throw BeamsError.invalidWebToken("the subscription has no keys.p256dh and keys.auth strings") }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
        } catch {
            throw BeamsError.invalidWebToken(error.description)
        }
        let url = subscription.endpoint
        let authority = url.port == 443 ? url.host : "\(url.host):\(url.port)"
        guard hosts.pattern(for: url) != nil else {
            throw BeamsError.invalidWebToken(
                "the endpoint's host \(authority) is not an allowed push service (port 443 unless web.pushServiceHosts names another)"
            )
        }
        if let address = url.literalAddress, case .refused(let range) = policy.verdict(for: address, host: url.host) {
            throw BeamsError.invalidWebToken(
                "the endpoint's address \(authority) is \(range) (web.allowedDestinations)")
        }
        return storedForm(endpoint: endpoint, subscription: subscription)
    }

    /// How a web or UnifiedPush subscription is stored, and so looked up: the endpoint and the keys re-encoded as
    /// unpadded base64url, members in one order. Registration and look-up must build it alike, or a device
    /// registered one way could not be found the other.
    static func storedForm(endpoint: String, subscription: WebPushSubscription) -> String {
        JSONValue.object([
            "endpoint": .string(endpoint),
            "keys": .object([
                "auth": .string(Base64URL.encode(subscription.keys.authSecret)),
                "p256dh": .string(Base64URL.encode(subscription.keys.publicPoint)),
            ]),
        ]).jsonText
    }

    /// Base64 in either alphabet (RFC 4648 §4 or §5), padded or not; nil for anything else.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var bytes = Array(text.utf8)
        if bytes.last == UInt8(ascii: "=") {
            guard bytes.count % 4 == 0 else { return nil }
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        }
        for index in bytes.indices {
            if bytes[index] == UInt8(ascii: "+") {
                bytes[index] = UInt8(ascii: "-")
            } else if bytes[index] == UInt8(ascii: "/") {
                bytes[index] = UInt8(ascii: "_")
            }
        }
        return try? Base64URL.decode(utf8: bytes)
    }

    /// The stored token of a web or UnifiedPush subscription, from what a person looking it up has at hand: the
    /// subscription JSON (a browser's `JSON.stringify(subscription)`, or the `{"endpoint","keys"}` body a UnifiedPush
    /// app registered), in any member order, with or without `expirationTime` and key padding, or the Web SDK's
    /// base64 token. Only the canonical form is rebuilt (as `web` and `unifiedPush` store it); no host, port or
    /// address rule is applied, since a look-up contacts nothing. The endpoint alone cannot find a device: the
    /// store keys a subscription by its endpoint and keys together.
    package static func subscriptionLookupKey(_ raw: String) throws(BeamsError) -> String {
        let json = raw.hasPrefix("{") ? Array(raw.utf8) : decodeBase64(raw)
        guard raw.utf8.count <= maxWebTokenBytes, let json,
            let object = JSONValue.parse(json, limits: JSONLimits(maxDepth: 4, maxBytes: maxWebTokenBytes))?
                .objectValue,
            let endpoint = object["endpoint"]?.stringValue, let keys = object["keys"]?.objectValue,
            let p256dh = keys["p256dh"]?.stringValue, let auth = keys["auth"]?.stringValue
        else {
            throw BeamsError(
                400, "Bad request",
                #"Give the subscription with its endpoint and keys: {"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}} (or the Web SDK's base64 token); the endpoint alone does not identify a device"#
            )
        }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
        } catch {
            throw BeamsError(400, "Bad request", "Not a valid subscription: \(error.description)")
        }
        return storedForm(endpoint: endpoint, subscription: subscription)
    }

    /// Longest UnifiedPush endpoint accepted: the UnifiedPush specification bounds endpoints to 1000 bytes.
    static let maxUnifiedPushEndpointBytes = 1000

    /// A UnifiedPush subscription as the app sends it (`{"endpoint":…,"keys":{"p256dh":…,"auth":…}}`, what the
    /// android-connector's `PushEndpoint` carries), checked like a browser's (`WebPushSubscription`: https, a P-256
    /// point, a 16-byte secret) plus the port rule of open endpoints (443 unless `unifiedpush.ports` lists more) and,
    /// for an address literal, the address rules. Returns the canonical token (the `web` form) and the endpoint,
    /// whose host the caller resolves and judges.
    public static func unifiedPush(_ body: [String: JSONValue], ports: Set<Int>) throws(BeamsError) -> (
        token: String, endpoint: HTTPURL
    ) {
        guard let endpoint = body["endpoint"]?.stringValue else {
            throw BeamsError.invalidUnifiedPushEndpoint("`endpoint` (a string) is required")
        }
        guard endpoint.utf8.count <= maxUnifiedPushEndpointBytes else {
            throw BeamsError.invalidUnifiedPushEndpoint(
                "`endpoint` is longer than \(maxUnifiedPushEndpointBytes) bytes")
        }
        guard let keys = body["keys"]?.objectValue, let p256dh = keys["p256dh"]?.stringValue,
            let auth = keys["auth"]?.stringValue
        else { throw BeamsError.invalidUnifiedPushEndpoint("`keys.p256dh` and `keys.auth` (strings) are required") }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
        } catch {
            throw BeamsError.invalidUnifiedPushEndpoint(error.description)
        }
        let url = subscription.endpoint
        guard WebPushOpenEndpoints(ports: ports).allowsPort(of: url) else {
            let allowed = ports.sorted().map(String.init).joined(separator: ", ")
            throw BeamsError.invalidUnifiedPushEndpoint(
                "port \(url.port) is not allowed (allowed: \(allowed); unifiedpush.ports)")
        }
        let token = storedForm(endpoint: endpoint, subscription: subscription)
        return (token, url)
    }

    /// Longest HMS push token accepted. Huawei says not to check the token's length, which changed before and
    /// differs between HMS Core and HarmonyOS; 512 bounds what one device row and one 1,000-token batch can cost.
    static let maxHMSTokenBytes = 512

    /// An HMS Core push token (`HmsInstanceId.getToken` or `onNewToken`): non-empty, at most 512 bytes, printable
    /// ASCII without spaces. No length or alphabet rule beyond that: Huawei changed the encoding once already.
    package static func hms(_ token: String) throws(BeamsError) -> String {
        let bytes = token.utf8
        guard (1...maxHMSTokenBytes).contains(bytes.count) else {
            throw BeamsError(400, "Bad request", "Invalid HMS token: must be 1 to \(maxHMSTokenBytes) characters long")
        }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw BeamsError(400, "Bad request", "Invalid HMS token: must be printable ASCII without spaces")
        }
        return token
    }

    /// The token in the form the store keys devices by, by platform, with no web push service or destination
    /// allowed beyond the defaults: the call of code outside the package (fuzz/Sources/DeviceBodyFuzz), whose public
    /// signature cannot name the package's allowance types.
    public static func normalized(_ token: String, platform: Platform) throws(BeamsError) -> String {
        try normalized(token, platform: platform, pushServiceHosts: [], allowedDestinations: [])
    }

    /// The token in the form the store keys devices by, by platform; a web subscription's endpoint must be on a known
    /// push service or one of `pushServiceHosts`, at an address `allowedDestinations` permits (the instance's
    /// `web` section, read by `DeviceAPI.normalizedToken`).
    package static func normalized(
        _ token: String, platform: Platform, pushServiceHosts: [WebPushHostAllowlist.Pattern],
        allowedDestinations: [DestinationPolicy.Allowance]
    ) throws(BeamsError) -> String {
        switch platform {
        case .apns: return try apns(token)
        case .fcm: return try fcm(token)
        case .web:
            var hosts = WebPushHostAllowlist.knownPushServices
            hosts.patterns += pushServiceHosts
            return try web(token, hosts: hosts, policy: DestinationPolicy(allowances: allowedDestinations))
        case .unifiedpush:
            // Registered with `{"endpoint","keys"}` and resolved (`unifiedPushToken`); a token here is a stored one.
            throw BeamsError(
                400, "Bad request", "unifiedpush devices register with {\"endpoint\", \"keys\"}, not a token")
        case .hms: return try hms(token)
        }
    }
}
