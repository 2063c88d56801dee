/// An EC P-256 private key that signs ES256 (APNs provider tokens).
///
/// Its `EVPKey` owns the OpenSSL handle; immutable, so shared by every thread that mints tokens without a lock.
package final class ES256PrivateKey: Sendable, CustomStringConvertible {
    private let key: EVPKey

    /// The matching public key (derived once at load time).
    package let publicKey: ES256PublicKey

    /// Loads a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, Apple's `.p8` format) or SEC1
    /// (`-----BEGIN EC PRIVATE KEY-----`). Encrypted keys are refused without prompting.
    package init(pem: String) throws(KeyLoadError) {
        let key = try EVPKey.privateKey(pem: pem)
        try PEMKeyReader.requireP256(key.pointer)
        // Only the public half goes to the public key object, so that it never holds the private scalar.
        publicKey = try ES256PublicKey(key.publicHalf())
        self.key = key
    }

    /// Loads a PEM private key file, e.g. Apple's `AuthKey_<KEYID>.p8`.
    package convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    /// Signs `message` with ECDSA P-256 / SHA-256 and returns the JOSE form: 64 bytes R‖S.
    package func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try ES256Signature.raw(fromDER: try signDER(message))
    }

    /// Signs `message` and returns OpenSSL's DER signature (what `openssl dgst -verify` reads).
    package func signDER(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.signSHA256(message)
    }

    /// Never prints key material.
    package var description: String { "ES256PrivateKey(P-256)" }
}
