import FCMClient
import Foundation
import JSON
import TestSupport
import XCTest

/// A service-account JSON file made around a fresh RSA key from the `openssl` CLI, shaped like the files the
/// Firebase console hands out.
struct ServiceAccountFixture {
    let pair: TestKeyPair
    let members: [String: JSONValue]

    static let projectID = "push-test-1a2b3"
    static let clientEmail = "firebase-adminsdk-x1@push-test-1a2b3.iam.gserviceaccount.com"
    static let privateKeyID = "0123456789abcdef0123456789abcdef01234567"
    static let tokenURI = "https://oauth2.googleapis.com/token"

    init(bits: Int = 2048) throws {
        pair = try TestKeys.makeRSA(bits: bits)
        members = [
            "type": "service_account",
            "project_id": .string(Self.projectID),
            "private_key_id": .string(Self.privateKeyID),
            "private_key": .string(pair.privateKeyPEM),
            "client_email": .string(Self.clientEmail),
            "client_id": "109876543210987654321",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(Self.tokenURI),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "universe_domain": "googleapis.com",
        ]
    }

    /// The file's JSON with some members replaced (`nil` removes one).
    func json(_ changes: [String: JSONValue?] = [:]) -> [UInt8] {
        var copy = members
        for (key, value) in changes { copy[key] = value }
        return JSONValue.object(copy).serialized()
    }

    func account() throws -> ServiceAccount {
        try ServiceAccount(json: json())
    }

    func remove() {
        TestKeys.remove(pair)
    }
}

/// Asserts that `body` throws exactly `expected`.
func XCTAssertThrowsError<T, E: Error & Equatable>(
    _ body: @autoclosure () throws -> T, equals expected: E, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line
) {
    do {
        let value = try body()
        XCTFail("expected \(expected), got \(value) \(message)", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(error, expected, message, file: file, line: line)
    } catch {
        XCTFail("expected \(expected), got \(type(of: error)) \(error) \(message)", file: file, line: line)
    }
}
