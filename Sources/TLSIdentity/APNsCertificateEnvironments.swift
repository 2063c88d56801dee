/// The APNs environments a client certificate is marked for: Apple puts extension `1.2.840.113635.100.6.3.1` in
/// development (sandbox) certificates and `1.2.840.113635.100.6.3.2` in production ones; a "Sandbox & Production"
/// certificate carries both. APNs answers `403 BadCertificateEnvironment` on the host of an environment the
/// certificate is not for (docs/APNS.md). A certificate with neither marker (self-made test certificates) is
/// `none`: what APNs does with it is not known.
public struct APNsCertificateEnvironments: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    package static let sandbox = APNsCertificateEnvironments(rawValue: 1)
    package static let production = APNsCertificateEnvironments(rawValue: 2)
    package static let both: APNsCertificateEnvironments = [.sandbox, .production]
    package static let none: APNsCertificateEnvironments = []

    /// The development (sandbox) marker's object identifier.
    package static let sandboxOID = "1.2.840.113635.100.6.3.1"
    /// The production marker's object identifier.
    package static let productionOID = "1.2.840.113635.100.6.3.2"

    /// The markers among a certificate's extensions (their values are not looked at: Apple's are empty).
    public init(_ extensions: X509Extensions) {
        self = []
        if extensions.values[Self.sandboxOID] != nil { insert(.sandbox) }
        if extensions.values[Self.productionOID] != nil { insert(.production) }
    }

    /// `sandbox`, `production`, in that order: the names `defaultEnvironment` uses.
    package var names: [String] {
        (contains(.sandbox) ? ["sandbox"] : []) + (contains(.production) ? ["production"] : [])
    }

    /// `sandbox`, `production`, `sandbox+production` or `none`.
    public var description: String { isEmpty ? "none" : names.joined(separator: "+") }
}
