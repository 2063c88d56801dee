import COpenSSL
import Foundation
import JWTSigner
import TestSupport
import XCTest

final class ES256KeyLoadingTests: XCTestCase {
    func testLoadsPKCS8PrivateKeyFromPEMAndFile() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        XCTAssertTrue(pair.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let fromPEM = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let fromFile = try ES256PrivateKey(contentsOfFile: pair.privateKeyPath)
        let published = try ES256PublicKey(contentsOfFile: pair.publicKeyPath)
        XCTAssertEqual(fromPEM.publicKey, published)
        XCTAssertEqual(fromFile.publicKey, published)
    }

    func testLoadsSEC1PrivateKey() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let sec1 = try TestKeys.sec1PrivateKey(of: pair)
        XCTAssertTrue(sec1.pem.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let key = try ES256PrivateKey(contentsOfFile: sec1.path)
        XCTAssertEqual(key.publicKey, try ES256PublicKey(pem: pair.publicKeyPEM))
    }

    func testPublicKeyPEMRoundTripsThroughOpenSSLWriter() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        XCTAssertEqual(try key.publicKey.pem(), pair.publicKeyPEM)
    }

    func testMissingFileReportsPathAndSystemReason() {
        let path = "/nonexistent-\(UUID().uuidString)/AuthKey.p8"
        XCTAssertThrowsError(
            try ES256PrivateKey(contentsOfFile: path),
            equals: .unreadableFile(path: path, reason: "No such file or directory"))
    }

    func testDirectoryIsAnUnreadableKeyFile() throws {
        let directory = try TestKeys.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(
            try ES256PrivateKey(contentsOfFile: directory),
            equals: .unreadableFile(path: directory, reason: "Is a directory"))
    }

    func testGarbageIsNotPEM() throws {
        XCTAssertThrowsError(try ES256PrivateKey(pem: "this is not a key"), equals: .notPEM)
        XCTAssertThrowsError(try ES256PublicKey(pem: ""), equals: .notPEM)
        let directory = try TestKeys.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/garbage.p8"
        try Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try ES256PrivateKey(contentsOfFile: path), equals: .notPEM)
    }

    func testCorruptedPEMBodyIsUndecodable() throws {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAAAbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
        XCTAssertThrowsError(try ES256PrivateKey(pem: pem)) { error in
            guard case .undecodable(let label, let crypto)? = error as? KeyLoadError else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(label, "PRIVATE KEY")
            XCTAssertFalse(crypto.messages.isEmpty, "OpenSSL's reason should be carried")
        }
    }

    func testCertificateIsNotAPrivateKey() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let certificate = pair.directory + "/cert.pem"
        try TestKeys.runOpenSSL([
            "req", "-x509", "-key", pair.privateKeyPath, "-subj", "/CN=test", "-days", "1", "-out", certificate,
        ])
        XCTAssertThrowsError(try ES256PrivateKey(contentsOfFile: certificate)) { error in
            guard case .undecodable(label: "CERTIFICATE", _)? = error as? KeyLoadError else {
                return XCTFail("unexpected \(error)")
            }
        }
    }

    func testRSAKeyIsRejectedAsWrongType() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: pair.privateKeyPEM), equals: .wrongKeyType(found: "RSA 2048-bit"))
        XCTAssertThrowsError(try ES256PublicKey(pem: pair.publicKeyPEM), equals: .wrongKeyType(found: "RSA 2048-bit"))
    }

    func testP384KeyIsRejectedAsWrongCurve() throws {
        let pair = try TestKeys.makeEC(curve: "P-384")
        defer { TestKeys.remove(pair) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: pair.privateKeyPEM), equals: .wrongKeyType(found: "EC P-384"))
        XCTAssertThrowsError(try ES256PublicKey(pem: pair.publicKeyPEM), equals: .wrongKeyType(found: "EC P-384"))
    }

    func testSecp256k1KeyIsRejectedDespiteHaving256Bits() throws {
        let pair = try TestKeys.makeEC(curve: "secp256k1")
        defer { TestKeys.remove(pair) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: pair.privateKeyPEM), equals: .wrongKeyType(found: "EC secp256k1"))
    }

    func testEncryptedPKCS8KeyIsRejectedWithoutPrompting() throws {
        let pair = try TestKeys.makeEncryptedP256()
        defer { TestKeys.remove(pair) }
        XCTAssertTrue(pair.privateKeyPEM.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        XCTAssertThrowsError(try ES256PrivateKey(contentsOfFile: pair.privateKeyPath), equals: .encrypted)
    }

    func testEncryptedSEC1KeyIsRejectedWithoutPrompting() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let path = pair.directory + "/encrypted-sec1.pem"
        try TestKeys.runOpenSSL([
            "ec", "-in", pair.privateKeyPath, "-aes-256-cbc", "-passout", "pass:secret", "-out", path,
        ])
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(pem.contains("Proc-Type: 4,ENCRYPTED"))
        XCTAssertThrowsError(try ES256PrivateKey(pem: pem), equals: .encrypted)
    }

    func testFailedLoadLeavesOpenSSLErrorQueueEmpty() throws {
        let pair = try TestKeys.makeEncryptedP256()
        defer { TestKeys.remove(pair) }
        XCTAssertThrowsError(try ES256PrivateKey(pem: pair.privateKeyPEM))
        XCTAssertEqual(ERR_peek_error(), 0)
        XCTAssertThrowsError(try ES256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
        XCTAssertEqual(ERR_peek_error(), 0)
    }

    func testPublicKeyFromCoordinatesMustBeOnCurve() {
        XCTAssertThrowsError(
            try ES256PublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        ) { error in
            guard case .invalidPublicKey? = error as? KeyLoadError else { return XCTFail("unexpected \(error)") }
        }
        XCTAssertThrowsError(
            try ES256PublicKey(x: [1], y: [2]),
            equals: .invalidPublicKey("x and y must be 32 bytes each, got 1 and 1"))
    }

    func testDescriptionsNeverContainKeyMaterial() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        XCTAssertEqual("\(key)", "ES256PrivateKey(P-256)")
    }
}
