import COpenSSL
import Foundation
import JWTSigner

/// Reads the fields `CertificateInfo` holds from an `X509*`, borrowed from its `OpenSSLHandle` for the call (the
/// handle is the argument, so it outlives every use of its pointer).
enum X509Reader {
    static func info(_ handle: OpenSSLHandle) throws(TLSIdentityError) -> CertificateInfo {
        let x509 = handle.pointer
        let name = X509_get_subject_name(x509)
        let subject: String
        if let line = X509_NAME_oneline(name, nil, 0) {
            subject = String(cString: line)
            copenssl_free(line)
        } else {
            subject = ""
        }
        let certificateDER = try der(x509)
        let extensions: X509Extensions
        do throws(DERError) {
            extensions = try X509Extensions(certificateDER: certificateDER)
        } catch {
            throw .invalidExtensions(error)
        }
        let topics: APNsTopicsExtension?
        do throws(DERError) {
            topics = try extensions.values[APNsTopicsExtension.oid].map { (der) throws(DERError) in
                try APNsTopicsExtension(der: der)
            }
        } catch {
            throw .invalidTopicsExtension(error)
        }
        return CertificateInfo(
            subject: subject,
            uid: entry(name, NID_userId),
            organizationalUnit: entry(name, NID_organizationalUnitName),
            notBefore: try date(X509_get0_notBefore(x509), "notBefore"),
            notAfter: try date(X509_get0_notAfter(x509), "notAfter"),
            sha256Fingerprint: try fingerprint(x509),
            topicsExtension: topics,
            environments: APNsCertificateEnvironments(extensions))
    }

    /// The first subject entry with `nid`, as UTF-8.
    private static func entry(_ name: OpaquePointer?, _ nid: Int32) -> String? {
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&out, data)
        guard length >= 0, let out else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { copenssl_free(out) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?, _ field: String) throws(TLSIdentityError) -> Date {
        var parts = tm()
        do throws(CryptoError) {
            try check(ASN1_TIME_to_tm(try check(time, "X509_get0_\(field)"), &parts), "ASN1_TIME_to_tm (\(field))")
        } catch {
            throw .crypto(error)
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func fingerprint(_ x509: OpaquePointer) throws(TLSIdentityError) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        do throws(CryptoError) {
            try check(X509_digest(x509, EVP_sha256(), &digest, &length), "X509_digest")
        } catch {
            throw .crypto(error)
        }
        return digest.prefix(Int(length)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The certificate's DER, for the pure readers (`X509Extensions`).
    private static func der(_ x509: OpaquePointer) throws(TLSIdentityError) -> [UInt8] {
        do throws(CryptoError) {
            return try derEncoded("i2d_X509") { i2d_X509(x509, &$0) }
        } catch {
            throw .crypto(error)
        }
    }
}
