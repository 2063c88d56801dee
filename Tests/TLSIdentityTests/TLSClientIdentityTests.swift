import Foundation
import TLSIdentity
import TestSupport
import XCTest

/// Loading .p12 files and PEM pairs made by Tests/Support/apns_certificates.py (openssl + cryptography).
final class TLSClientIdentityTests: XCTestCase {
    private static let shared = Result { try APNsTestCertificates.make() }
    private var certs: APNsTestCertificates { get throws { try Self.shared.get() } }

    override class func tearDown() {
        (try? shared.get())?.remove()
    }

    func testLoadsAPKCS12AndReadsWhatTheCertificateSays() throws {
        let certs = try certs
        let identity = try TLSClientIdentity.pkcs12(file: certs["p12"], password: certs["password"])
        let info = identity.certificate
        XCTAssertEqual(info.uid, "com.example.app")
        XCTAssertEqual(info.organizationalUnit, "TEAMID1234")
        XCTAssertTrue(info.subject.contains("UID=com.example.app"), info.subject)
        XCTAssertEqual(info.topics, ["com.example.app", "com.example.app.voip", "com.example.app.complication"])
        XCTAssertEqual(info.topicsExtension?.entries.map(\.kinds), [["app"], ["voip"], ["complication"]])
        XCTAssertEqual(info.environments, .both)
        XCTAssertEqual("\(info.environments)", "sandbox+production")
        XCTAssertEqual(info.sha256Fingerprint.count, 64)
        let days = info.daysLeft(at: Date())
        XCTAssertTrue((363...365).contains(days), "\(days)")
        guard case .valid = info.validity(at: Date()) else { return XCTFail("\(info.validity(at: Date()))") }
        guard case .pkcs12(let der, let password) = identity.material else { return XCTFail("\(identity.material)") }
        XCTAssertEqual(der, try certs.bytes("p12"))
        XCTAssertEqual(password, certs["password"])
        XCTAssertFalse("\(identity)".contains(certs["password"]), "the description must not show the password")
    }

    func testLoadsAPEMPairWithTheSameFacts() throws {
        let certs = try certs
        let pem = try TLSClientIdentity.pem(certificateFile: certs["cert"], keyFile: certs["key"], password: nil)
        let p12 = try TLSClientIdentity.pkcs12(file: certs["p12"], password: certs["password"])
        XCTAssertEqual(pem.certificate, p12.certificate)
    }

    func testSingleTopicCertificateWithoutTheExtensionHasItsUIDAsOnlyTopic() throws {
        let certs = try certs
        let info = try TLSClientIdentity.pem(
            certificateFile: certs["single_cert"], keyFile: certs["single_key"],
            password: nil
        ).certificate
        XCTAssertNil(info.topicsExtension)
        XCTAssertEqual(info.topics, ["com.example.single"])
        XCTAssertEqual(info.environments, .sandbox)
        XCTAssertTrue(info.covers("com.example.single"))
        XCTAssertFalse(info.covers("com.example.app"))
    }

    func testReadsEachEnvironmentMarkerSetFromGeneratedCertificates() throws {
        let certs = try certs
        func environments(_ name: String) throws -> APNsCertificateEnvironments {
            try TLSClientIdentity.pem(
                certificateFile: certs["\(name)_cert"], keyFile: certs["\(name)_key"],
                password: nil
            ).certificate.environments
        }
        XCTAssertEqual(try environments("single"), .sandbox)
        XCTAssertEqual(try environments("production"), .production)
        XCTAssertEqual(try environments("unmarked"), .none)
        XCTAssertEqual(try environments("unmarked").names, [])
        XCTAssertEqual("\(try environments("unmarked"))", "none")
        XCTAssertEqual(try environments("production").names, ["production"])
        // The topics extension is still read next to the markers.
        XCTAssertEqual(
            try TLSClientIdentity.pem(
                certificateFile: certs["production_cert"], keyFile: certs["production_key"],
                password: nil
            ).certificate.topics.count, 3)
    }

    func testExpiredAndNotYetValidCertificatesLoadButReportTheirValidity() throws {
        let certs = try certs
        let expired = try TLSClientIdentity.pkcs12(file: certs["expired_p12"], password: certs["password"]).certificate
        XCTAssertEqual(expired.validity(at: Date()), .expired)
        XCTAssertLessThan(expired.daysLeft(at: Date()), 0)
        let future = try TLSClientIdentity.pem(
            certificateFile: certs["future_cert"], keyFile: certs["future_key"],
            password: nil
        ).certificate
        XCTAssertEqual(future.validity(at: Date()), .notYetValid)
    }

    func testWrongPasswordIsNamedAsSuch() throws {
        let certs = try certs
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12(file: certs["p12"], password: "wrong")) { error in
            XCTAssertEqual(error as? TLSIdentityError, .wrongPassword)
            XCTAssertTrue("\(error)".contains("mac verify failure"), "\(error)")
        }
    }

    func testLegacyRC2EncryptionGetsTheReexportAdvice() throws {
        let certs = try certs
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12(file: certs["legacy_p12"], password: certs["password"])) {
            error in
            guard case .legacyEncryption = error as? TLSIdentityError else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("openssl pkcs12 -legacy"), "\(error)")
        }
    }

    func testKeyOfAnotherCertificateIsRefused() throws {
        let certs = try certs
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificateFile: certs["cert"], keyFile: certs["other_key"],
                password: nil)
        ) { error in
            XCTAssertEqual(error as? TLSIdentityError, .keyDoesNotMatchCertificate)
        }
    }

    func testEncryptedKeyNeedsItsPassword() throws {
        let certs = try certs
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificateFile: certs["encrypted_cert"],
                keyFile: certs["encrypted_key"], password: nil)
        ) { error in
            XCTAssertEqual(error as? TLSIdentityError, .keyNeedsPassword)
        }
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificateFile: certs["encrypted_cert"],
                keyFile: certs["encrypted_key"], password: "wrong")
        ) { error in
            XCTAssertEqual(error as? TLSIdentityError, .badKey("wrong password"))
        }
        let identity = try TLSClientIdentity.pem(
            certificateFile: certs["encrypted_cert"], keyFile: certs["encrypted_key"],
            password: certs["key_password"])
        XCTAssertEqual(identity.certificate.uid, "com.example.app")
    }

    func testAKeyOrGarbageIsNotACertificate() throws {
        let certs = try certs
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificate: try certs.bytes("key"), key: try certs.bytes("key"),
                password: nil)
        ) { error in
            guard case .notACertificate = error as? TLSIdentityError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificate: Array("hello".utf8), key: try certs.bytes("key"),
                password: nil)
        ) { error in
            XCTAssertEqual(error as? TLSIdentityError, .notACertificate(nil))
        }
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12(try certs.bytes("cert"), password: "x")) { error in
            guard case .notPKCS12 = error as? TLSIdentityError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12([], password: "x"))
    }

    func testEveryTruncationOfAPKCS12FailsWithATypedError() throws {
        let der = try certs.bytes("p12")
        // Every prefix in steps (each a fresh parse of hostile bytes): a typed error, never a trap or a success.
        for length in stride(from: 0, to: der.count, by: 7) {
            XCTAssertThrowsError(try TLSClientIdentity.pkcs12(Array(der.prefix(length)), password: "p12-secret")) {
                error in
                XCTAssertNotNil(error as? TLSIdentityError, "prefix \(length): \(error)")
            }
        }
        var flipped = der
        flipped[der.count / 2] ^= 0xFF
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12(flipped, password: "p12-secret"))
    }

    func testTruncatedPEMCertificateIsRefused() throws {
        let pem = try certs.bytes("cert")
        XCTAssertThrowsError(
            try TLSClientIdentity.pem(
                certificate: Array(pem.prefix(pem.count / 2)),
                key: try certs.bytes("key"), password: nil)
        ) { error in
            guard case .notACertificate = error as? TLSIdentityError else { return XCTFail("\(error)") }
        }
    }

    func testMissingFileNamesThePath() {
        XCTAssertThrowsError(try TLSClientIdentity.pkcs12(file: "/nonexistent/a.p12", password: "x")) { error in
            XCTAssertEqual(
                error as? TLSIdentityError,
                .unreadableFile(path: "/nonexistent/a.p12", reason: "No such file or directory"))
        }
    }
}
