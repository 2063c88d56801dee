import TLSIdentity

/// An instance's APNs client certificate (`instances[].apns.certificate`): certificate authentication instead of
/// the `.p8` key. Loaded and checked when the configuration is read, like the FCM service account.
package struct APNsCertificateConfig: Sendable {
    /// The certificate and key as presented in the TLS handshake, and what the certificate says.
    package var identity: TLSClientIdentity
    /// The configured file(s), for messages: the `.p12`, or the PEM certificate and key.
    package var files: [String]

    package init(identity: TLSClientIdentity, files: [String]) {
        self.identity = identity
        self.files = files
    }
}
