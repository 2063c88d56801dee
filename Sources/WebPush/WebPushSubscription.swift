import HTTPClient
import JWTSigner

/// A browser's push subscription (`PushSubscription.toJSON()`: `endpoint`, `keys.p256dh`, `keys.auth`), validated.
///
/// Which push services may be contacted (the SSRF policy) is the sender's decision; this type only guarantees a
/// well-formed https URL and usable keys.
package struct WebPushSubscription: Sendable {
    /// Longest endpoint accepted. Real ones are 150-450 bytes (FCM, Mozilla, Apple, Microsoft).
    package static let maxEndpointLength = 2048
    /// Longest `p256dh` text: 65 bytes are 87 base64url characters, 88 with padding.
    static let maxP256DHLength = 88
    /// Longest `auth` text: 16 bytes are 22 base64url characters, 24 with padding.
    static let maxAuthLength = 24

    /// The push resource URL to POST to.
    package let endpoint: HTTPURL
    /// The encryption keys.
    package let keys: WebPushSubscriberKeys
    /// The push service's origin (RFC 6454: `https://host`, plus `:port` when not 443), the VAPID `aud`; made once
    /// here rather than per message.
    package let audience: String

    /// Validates the three strings a browser reports.
    /// - Throws: `WebPushSubscriptionError` naming the first field that is wrong.
    package init(endpoint: String, p256dh: String, auth: String) throws(WebPushSubscriptionError) {
        let url = try Self.validateEndpoint(endpoint)
        self.endpoint = url
        audience = url.port == 443 ? "https://\(url.host)" : "https://\(url.host):\(url.port)"
        let point = try Self.decode(p256dh, .p256dh, maxLength: Self.maxP256DHLength)
        let secret = try Self.decode(auth, .auth, maxLength: Self.maxAuthLength)
        keys = try WebPushSubscriberKeys(p256dh: point, auth: secret)
    }

    private static func validateEndpoint(_ text: String) throws(WebPushSubscriptionError) -> HTTPURL {
        let bytes = text.utf8
        guard bytes.count <= maxEndpointLength else { throw .tooLong(.endpoint, maxBytes: maxEndpointLength) }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { throw .endpointHasInvalidCharacters }
        guard !bytes.contains(UInt8(ascii: "#")) else { throw .endpointHasFragment }
        // libcurl would accept `user:pass@` and send it as Basic auth to whatever host follows; the authority is
        // everything between `//` and the first `/`, `?` (no `#` is left).
        if let start = text.range(of: "//") {
            let authority = text[start.upperBound...].prefix { $0 != "/" && $0 != "?" }
            if authority.contains("@") { throw .endpointHasCredentials }
        }
        let url: HTTPURL
        do throws(HTTPURL.ParseError) {
            url = try HTTPURL(text)
        } catch {
            if error == .unsupportedScheme { throw .endpointNotHTTPS }
            throw .invalidEndpoint(error.description)
        }
        guard url.scheme == "https" else { throw .endpointNotHTTPS }
        return url
    }

    /// Strict base64url, with trailing `=` padding tolerated: some browsers and SDKs pad their keys.
    private static func decode(_ text: String, _ field: WebPushSubscriptionError.Field, maxLength: Int)
        throws(WebPushSubscriptionError) -> [UInt8]
    {
        var bytes = Array(text.utf8)
        guard bytes.count <= maxLength else { throw .tooLong(field, maxBytes: maxLength) }
        if bytes.last == UInt8(ascii: "=") {
            guard bytes.count % 4 == 0 else { throw .notBase64URL(field) }
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        }
        do {
            return try Base64URL.decode(utf8: bytes)
        } catch {
            throw .notBase64URL(field)
        }
    }
}
