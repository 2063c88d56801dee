/// PEM files for the TLS listener. TLS 1.2 is the minimum and ALPN selects `http/1.1` (never h2).
public struct TLSConfiguration: Sendable {
    public var certificateChainPath: String
    public var privateKeyPath: String

    /// - Parameters:
    ///   - certificateChainPath: PEM, leaf first, then intermediates.
    ///   - privateKeyPath: PEM private key of the leaf (unencrypted).
    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}
