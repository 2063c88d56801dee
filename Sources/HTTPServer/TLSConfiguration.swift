/// PEM files for the TLS listener. TLS 1.2 is the minimum and ALPN selects `http/1.1` (never h2).
package struct TLSConfiguration: Sendable {
    package var certificateChainPath: String
    package var privateKeyPath: String

    /// - Parameters:
    ///   - certificateChainPath: PEM, leaf first, then intermediates.
    ///   - privateKeyPath: PEM private key of the leaf (unencrypted).
    package init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}
