import FCMClient
import Foundation
import JSON
import JWTSigner
import TestSupport
import XCTest

final class ServiceAccountTests: XCTestCase {
    func testParsesConsoleShapedFileAndIgnoresOtherMembers() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let account = try fixture.account()
        XCTAssertEqual(account.projectID, ServiceAccountFixture.projectID)
        XCTAssertEqual(account.clientEmail, ServiceAccountFixture.clientEmail)
        XCTAssertEqual(account.privateKeyID, ServiceAccountFixture.privateKeyID)
        XCTAssertEqual(account.tokenURI, ServiceAccountFixture.tokenURI)
        XCTAssertEqual(account.privateKey.publicKey, try RS256PublicKey(pem: fixture.pair.publicKeyPEM))
    }

    func testReadsFileAndReportsUnreadableOrHugeFiles() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let path = fixture.pair.directory + "/service-account.json"
        try Data(fixture.json()).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try ServiceAccount(contentsOfFile: path).projectID, ServiceAccountFixture.projectID)
        let missing = fixture.pair.directory + "/absent.json"
        XCTAssertThrowsError(
            try ServiceAccount(contentsOfFile: missing),
            equals: ServiceAccountError.unreadableFile(path: missing, reason: "No such file or directory"))
        let huge = fixture.pair.directory + "/huge.json"
        try Data(repeating: 0x20, count: ServiceAccount.maxFileSize + 1).write(to: URL(fileURLWithPath: huge))
        XCTAssertThrowsError(
            try ServiceAccount(contentsOfFile: huge),
            equals: ServiceAccountError.unreadableFile(
                path: huge, reason: "larger than \(ServiceAccount.maxFileSize) bytes, not a service-account file"))
    }

    func testEachMissingFieldIsNamed() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        for field in ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
            XCTAssertThrowsError(
                try ServiceAccount(json: fixture.json([field: .none])),
                equals: ServiceAccountError.missingField(field), field)
        }
    }

    func testEachWrongTypeAndEmptyValueIsNamed() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        for field in ["project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
            XCTAssertThrowsError(
                try ServiceAccount(json: fixture.json([field: 12])),
                equals: ServiceAccountError.wrongType(field: field, expected: "a string"), field)
            XCTAssertThrowsError(
                try ServiceAccount(json: fixture.json([field: ""])),
                equals: ServiceAccountError.invalidField(field: field, reason: "empty"), field)
        }
        XCTAssertThrowsError(
            try ServiceAccount(json: fixture.json(["type": true])),
            equals: ServiceAccountError.wrongType(field: "type", expected: "a string"))
    }

    func testRejectsOtherCredentialTypes() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        XCTAssertThrowsError(
            try ServiceAccount(json: fixture.json(["type": "authorized_user"])),
            equals: ServiceAccountError.notServiceAccount(type: "authorized_user"))
    }

    func testRejectsHostileOrMalformedValues() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let cases: [(String, JSONValue, ServiceAccountError)] = [
            (
                "project_id", "my/../project",
                .invalidField(
                    field: "project_id",
                    reason: "only lower-case letters, digits, '-', '.' and ':' are allowed")
            ),
            (
                "project_id", "My-Project",
                .invalidField(
                    field: "project_id",
                    reason: "only lower-case letters, digits, '-', '.' and ':' are allowed")
            ),
            (
                "project_id", "a b",
                .invalidField(field: "project_id", reason: "contains the byte 0x20; expected printable ASCII")
            ),
            (
                "private_key_id", "abc\r\nX-Evil: 1",
                .invalidField(
                    field: "private_key_id",
                    reason: "contains the byte 0xd; expected printable ASCII")
            ),
            ("client_email", "not-an-address", .invalidField(field: "client_email", reason: "not an e-mail address")),
            (
                "token_uri", "http://oauth2.googleapis.com/token",
                .invalidField(field: "token_uri", reason: "must be an https:// URL")
            ),
            ("token_uri", "https://", .invalidField(field: "token_uri", reason: "must be an https:// URL")),
            (
                "client_email", .string(String(repeating: "a", count: 600) + "@x"),
                .invalidField(field: "client_email", reason: "longer than 512 bytes")
            ),
        ]
        for (field, value, expected) in cases {
            XCTAssertThrowsError(
                try ServiceAccount(json: fixture.json([field: value])), equals: expected, "\(field)=\(value)")
        }
    }

    func testRejectsNonRSAShortOrBrokenPrivateKeys() throws {
        let fixture = try ServiceAccountFixture()
        let ec = try TestKeys.makeP256()
        let short = try TestKeys.makeRSA(bits: 1024)
        defer { fixture.remove(); TestKeys.remove(ec); TestKeys.remove(short) }
        XCTAssertThrowsError(
            try ServiceAccount(json: fixture.json(["private_key": .string(ec.privateKeyPEM)])),
            equals: ServiceAccountError.privateKey(.unsuitableRSAKey(found: "EC P-256")))
        XCTAssertThrowsError(
            try ServiceAccount(json: fixture.json(["private_key": .string(short.privateKeyPEM)])),
            equals: ServiceAccountError.privateKey(.unsuitableRSAKey(found: "RSA 1024-bit")))
        XCTAssertThrowsError(
            try ServiceAccount(json: fixture.json(["private_key": "MIIEvQIBADANBg"])),
            equals: ServiceAccountError.privateKey(.notPEM))
    }

    func testRejectsNonJSONNonObjectAndDuplicateMembers() throws {
        XCTAssertThrowsError(try ServiceAccount(json: Array("[]".utf8)), equals: ServiceAccountError.notAnObject)
        guard case .notJSON? = caught({ _ = try ServiceAccount(json: Array("{\"type\":".utf8)) }) else {
            return XCTFail("truncated JSON accepted")
        }
        guard
            case .notJSON? = caught({
                _ = try ServiceAccount(json: Array(#"{"type":"service_account","type":"service_account"}"#.utf8))
            })
        else { return XCTFail("duplicate member accepted") }
    }

    func testDescriptionNeverShowsTheKey() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let text = "\(try fixture.account())"
        XCTAssertFalse(text.contains("PRIVATE"))
        XCTAssertEqual(
            text,
            "ServiceAccount(project: \(ServiceAccountFixture.projectID), client: "
                + "\(ServiceAccountFixture.clientEmail), key id: \(ServiceAccountFixture.privateKeyID))")
    }

    private func caught(_ body: () throws -> Void) -> ServiceAccountError? {
        do {
            try body()
            return nil
        } catch {
            return error as? ServiceAccountError
        }
    }
}
