import COpenSSL
import Foundation
import JWTSigner

/// A TLS client certificate with its private key, checked and inspected at load time: the bytes a TLS client
/// presents (`material`, handed to libcurl as a blob) plus what the certificate says (`certificate`).
///
/// Loading parses everything with OpenSSL once: the PKCS#12 MAC (wrong password), its encryption (OpenSSL 3
/// refuses legacy RC2-40 files), that a key and a certificate are there and belong together, and the fields of
/// `CertificateInfo`. Every OpenSSL object lives in an `OpenSSLHandle` inside the loading call; only values leave.
/// Expiry is not judged here: the caller compares `certificate.notAfter` with its clock.
package struct TLSClientIdentity: Sendable, CustomStringConvertible {
    /// What is presented in the handshake. Holds the password: never log it (`description` does not show it).
    package enum Material: Sendable, Equatable, CustomStringConvertible {
        /// A PKCS#12 (`.p12`) file's DER and its password.
        case pkcs12(der: [UInt8], password: String)
        /// PEM certificate (chain) and PEM private key, and the key's password when it is encrypted.
        case pem(certificate: [UInt8], key: [UInt8], password: String?)

        package var description: String {
            switch self {
            case .pkcs12(let der, _): return "pkcs12(\(der.count) bytes)"
            case .pem(let certificate, let key, _):
                return "pem(certificate: \(certificate.count) bytes, key: \(key.count) bytes)"
            }
        }
    }

    package let material: Material
    package let certificate: CertificateInfo

    /// Largest certificate or key file read: real ones are a few KB.
    package static let maxFileSize = 256 * 1024

    package var description: String { "TLSClientIdentity(\(certificate.subject), \(material))" }

    /// Loads a PKCS#12 file's bytes.
    /// - Throws: `TLSIdentityError`: `.notPKCS12`, `.wrongPassword`, `.legacyEncryption`, `.incompletePKCS12`,
    ///   `.keyDoesNotMatchCertificate`, `.invalidExtensions`, `.invalidTopicsExtension`.
    package static func pkcs12(_ der: [UInt8], password: String) throws(TLSIdentityError) -> TLSClientIdentity {
        ERR_clear_error()
        let (x509, key) = try parse(try decodePKCS12(der), password: password)
        try requireMatch(x509, key)
        return TLSClientIdentity(
            material: .pkcs12(der: der, password: password), certificate: try X509Reader.info(x509))
    }

    /// Checks the MAC (the password) and takes the certificate and key out. Handles are passed as arguments, not
    /// as raw pointers, so each stays alive for the whole call that uses its pointer.
    private static func parse(_ p12: OpenSSLHandle, password: String) throws(TLSIdentityError)
        -> (certificate: OpenSSLHandle, key: OpenSSLHandle)
    {
        guard PKCS12_mac_present(p12.pointer) == 0 || macVerifies(p12.pointer, password) else {
            OpenSSLErrorQueue.clear()
            throw .wrongPassword
        }
        var keyPointer: OpaquePointer?
        var certificatePointer: OpaquePointer?
        let parsed = password.withCString { PKCS12_parse(p12.pointer, $0, &keyPointer, &certificatePointer, nil) }
        // Owners first, so whatever OpenSSL handed out is freed on every path below.
        let key = keyPointer.map(OpenSSLHandle.key)
        let x509 = certificatePointer.map(OpenSSLHandle.certificate)
        do throws(CryptoError) {
            try check(parsed, "PKCS12_parse")
        } catch {
            if error.messages.contains(where: { $0.contains("unsupported") }) { throw .legacyEncryption(error) }
            if error.messages.contains(where: { $0.contains("mac verify failure") }) { throw .wrongPassword }
            throw .notPKCS12(error)
        }
        guard let x509 else { throw .incompletePKCS12(missing: "certificate") }
        guard let key else { throw .incompletePKCS12(missing: "private key") }
        return (x509, key)
    }

    /// Loads a PEM certificate (the first block is the client certificate; a chain may follow) and its PEM key.
    /// - Parameter password: for an encrypted key; nil refuses encrypted keys with `.keyNeedsPassword`.
    package static func pem(certificate: [UInt8], key: [UInt8], password: String?) throws(TLSIdentityError)
        -> TLSClientIdentity
    {
        ERR_clear_error()
        let x509 = try readCertificate(certificate)
        let privateKey = try readKey(key, password: password)
        try requireMatch(x509, privateKey)
        return TLSClientIdentity(
            material: .pem(certificate: certificate, key: key, password: password),
            certificate: try X509Reader.info(x509))
    }

    /// Reads and loads a `.p12` file.
    package static func pkcs12(file path: String, password: String) throws(TLSIdentityError) -> TLSClientIdentity {
        try pkcs12(try read(path, kind: "a PKCS#12 file"), password: password)
    }

    /// Reads and loads a PEM certificate file and a PEM key file.
    package static func pem(certificateFile: String, keyFile: String, password: String?) throws(TLSIdentityError)
        -> TLSClientIdentity
    {
        try pem(
            certificate: try read(certificateFile, kind: "a PEM certificate"),
            key: try read(keyFile, kind: "a PEM key"), password: password)
    }

    private static func read(_ path: String, kind: String) throws(TLSIdentityError) -> [UInt8] {
        do {
            return try KeyFile.read(path, maxSize: maxFileSize, kind: kind)
        } catch {
            if case .unreadableFile(let path, let reason) = error { throw .unreadableFile(path: path, reason: reason) }
            throw .unreadableFile(path: path, reason: error.description)
        }
    }

    private static func decodePKCS12(_ der: [UInt8]) throws(TLSIdentityError) -> OpenSSLHandle {
        guard !der.isEmpty, der.count <= maxFileSize else {
            throw .notPKCS12(CryptoError(operation: "d2i_PKCS12", messages: ["\(der.count) bytes"]))
        }
        let decoded = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        do throws(CryptoError) {
            return OpenSSLHandle(try check(decoded, "d2i_PKCS12")) { PKCS12_free($0) }
        } catch {
            throw .notPKCS12(error)
        }
    }

    /// PKCS#12 tools disagree on whether "no password" is an empty string or none at all: accept either.
    private static func macVerifies(_ p12: OpaquePointer, _ password: String) -> Bool {
        let verified = password.withCString { PKCS12_verify_mac(p12, $0, -1) } == 1
        return verified || (password.isEmpty && PKCS12_verify_mac(p12, nil, 0) == 1)
    }

    private static func readCertificate(_ pem: [UInt8]) throws(TLSIdentityError) -> OpenSSLHandle {
        let text = String(decoding: pem, as: UTF8.self)
        guard PEMKeyReader.firstLabel(text) != nil else { throw .notACertificate(nil) }
        let pointer: OpaquePointer?
        do throws(KeyLoadError) {
            pointer = try PEMKeyReader.withBIO(text) { bio throws(KeyLoadError) in PEM_read_bio_X509(bio, nil, nil, nil)
            }
        } catch {
            throw .notACertificate(nil)
        }
        guard let pointer else { throw .notACertificate(CryptoError.drainingQueue("PEM_read_bio_X509")) }
        return .certificate(pointer)
    }

    private static func readKey(_ pem: [UInt8], password: String?) throws(TLSIdentityError) -> OpenSSLHandle {
        let text = String(decoding: pem, as: UTF8.self)
        guard let password else {
            do throws(KeyLoadError) {
                // Refuses to prompt; tells an encrypted key apart from a broken one.
                return .key(
                    try PEMKeyReader.readKey(text, "PEM_read_bio_PrivateKey") { bio, callback, userData in
                        PEM_read_bio_PrivateKey(bio, nil, callback, userData)
                    })
            } catch {
                if case .encrypted = error { throw .keyNeedsPassword }
                throw .badKey(error.description)
            }
        }
        guard PEMKeyReader.firstLabel(text) != nil else { throw .badKey("not PEM (no -----BEGIN line)") }
        let pointer: OpaquePointer?
        do throws(KeyLoadError) {
            pointer = try PEMKeyReader.withBIO(text) { bio throws(KeyLoadError) in
                // No callback and a passphrase as user data: OpenSSL's default callback uses it, never a prompt.
                password.withCString { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0)) }
            }
        } catch {
            throw .badKey(error.description)
        }
        guard let pointer else {
            let error = CryptoError.drainingQueue("PEM_read_bio_PrivateKey")
            if error.messages.contains(where: { $0.contains("bad decrypt") }) { throw .badKey("wrong password") }
            throw .badKey(error.description)
        }
        return .key(pointer)
    }

    private static func requireMatch(_ x509: OpenSSLHandle, _ key: OpenSSLHandle) throws(TLSIdentityError) {
        do throws(CryptoError) {
            try check(X509_check_private_key(x509.pointer, key.pointer), "X509_check_private_key")
        } catch {
            throw .keyDoesNotMatchCertificate
        }
    }
}
