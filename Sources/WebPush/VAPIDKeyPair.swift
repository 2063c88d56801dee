import JWTSigner

/// An application server's VAPID key pair (RFC 8292 §3.2): a P-256 private key that signs the tokens, and the
/// public key browsers pass as `applicationServerKey` (the Web SDK fetches it from `web-vapid-public-key`).
package struct VAPIDKeyPair: Sendable {
    /// Signs the VAPID JWTs.
    package let privateKey: ES256PrivateKey
    /// The public key as the 65-byte uncompressed point.
    package let publicKey: [UInt8]
    /// `publicKey` in base64url without padding: the `k` parameter and the `vapidPublicKey` the Web SDK reads.
    package let publicKeyBase64URL: String

    /// Loads a P-256 private key PEM (PKCS#8 `BEGIN PRIVATE KEY` or SEC 1 `BEGIN EC PRIVATE KEY`).
    package init(pem: String) throws(KeyLoadError) {
        try self.init(privateKey: ES256PrivateKey(pem: pem))
    }

    /// Loads a P-256 private key PEM file.
    package init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(privateKey: ES256PrivateKey(contentsOfFile: path))
    }

    /// Wraps a loaded key.
    package init(privateKey: ES256PrivateKey) throws(KeyLoadError) {
        self.privateKey = privateKey
        do throws(CryptoError) {
            publicKey = try privateKey.publicKey.uncompressedPoint()
        } catch {
            throw .crypto(error)
        }
        publicKeyBase64URL = Base64URL.encode(publicKey)
    }

    /// A new key pair and its private key as PKCS#8 PEM (to write to the configured key file with mode 0600).
    package static func generate() throws(KeyLoadError) -> (keyPair: VAPIDKeyPair, privateKeyPEM: String) {
        let pem: String
        do throws(CryptoError) {
            pem = try P256KeyPair.generate().pkcs8PEM()
        } catch {
            throw .crypto(error)
        }
        return (try VAPIDKeyPair(pem: pem), pem)
    }
}
