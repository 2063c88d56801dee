/// Where an app's channel management calls and broadcast sends go (docs/APNS.md "Broadcast channels").
///
/// Apple documents the management hosts; the send host is uncertain (Apple's samples use `api-broadcast…`, other
/// Apple pages and libraries the ordinary `api…push.apple.com`), so both are configurable per instance.
package struct APNsBroadcastEndpoints: Sendable, Hashable {
    /// `https://host:port` of the channel management API, without a trailing slash.
    package var managementURL: String
    /// `https://host:port` that takes `POST /4/broadcasts/apps/<bundle>`.
    package var sendURL: String
    /// A PEM CA bundle to trust instead of the system's (tests with a self-signed mock); nil for Apple.
    package var caFile: String?

    package init(managementURL: String, sendURL: String, caFile: String? = nil) {
        self.managementURL = Self.trimmed(managementURL)
        self.sendURL = Self.trimmed(sendURL)
        self.caFile = caFile
    }

    /// Apple's development hosts: `api-manage-broadcast.sandbox.push.apple.com:2195` and
    /// `api-broadcast.sandbox.push.apple.com`.
    package static let sandbox = APNsBroadcastEndpoints(
        managementURL: "https://api-manage-broadcast.sandbox.push.apple.com:2195",
        sendURL: "https://api-broadcast.sandbox.push.apple.com:443")
    /// Apple's production hosts: `api-manage-broadcast.push.apple.com:2196` and `api-broadcast.push.apple.com`.
    package static let production = APNsBroadcastEndpoints(
        managementURL: "https://api-manage-broadcast.push.apple.com:2196",
        sendURL: "https://api-broadcast.push.apple.com:443")

    private static func trimmed(_ url: String) -> String {
        var text = url
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
