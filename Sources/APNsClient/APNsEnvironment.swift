import Foundation

/// Where notifications go: Apple's production or sandbox hosts, or a local server in tests.
package struct APNsEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// `https://host:port`, without a trailing slash.
    package let baseURL: String
    /// A PEM CA bundle to trust instead of the system store (tests with a self-signed mock); `nil` for Apple.
    package let caFile: String?

    /// `api.push.apple.com`; `port` is 443 or 2197 (Apple's firewall-friendly alternative).
    package static func production(port: Int = 443) -> APNsEnvironment {
        APNsEnvironment(baseURL: "https://api.push.apple.com:\(port)", caFile: nil)
    }

    /// `api.sandbox.push.apple.com` (development builds); `port` is 443 or 2197.
    package static func sandbox(port: Int = 443) -> APNsEnvironment {
        APNsEnvironment(baseURL: "https://api.sandbox.push.apple.com:\(port)", caFile: nil)
    }

    /// Production on port 443.
    package static let production = APNsEnvironment.production()
    /// Sandbox on port 443.
    package static let sandbox = APNsEnvironment.sandbox()

    /// Any HTTPS server speaking the APNs protocol, e.g. `custom(url: "https://127.0.0.1:8443", caFile: mock.caFile)`.
    /// TLS stays verified; `caFile` names the CA that signed the server's certificate.
    package static func custom(url: String, caFile: String? = nil) -> APNsEnvironment {
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        return APNsEnvironment(baseURL: trimmed, caFile: caFile)
    }

    package var description: String { baseURL }
}
