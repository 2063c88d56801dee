import APNsClient
import Foundation
import TestSupport
import XCTest

final class APNsEnvironmentTests: XCTestCase {
    func testAppleHostsAndPorts() {
        XCTAssertEqual(APNsEnvironment.production.baseURL, "https://api.push.apple.com:443")
        XCTAssertEqual(APNsEnvironment.sandbox.baseURL, "https://api.sandbox.push.apple.com:443")
        XCTAssertEqual(APNsEnvironment.production(port: 2197).baseURL, "https://api.push.apple.com:2197")
        XCTAssertEqual(APNsEnvironment.sandbox(port: 2197).baseURL, "https://api.sandbox.push.apple.com:2197")
        XCTAssertNil(APNsEnvironment.production.caFile)
    }

    func testCustomEnvironmentDropsTrailingSlashAndKeepsCA() {
        let custom = APNsEnvironment.custom(url: "https://127.0.0.1:8443/", caFile: "/tmp/ca.pem")
        XCTAssertEqual(custom.baseURL, "https://127.0.0.1:8443")
        XCTAssertEqual(custom.caFile, "/tmp/ca.pem")
        XCTAssertNotEqual(custom, APNsEnvironment.custom(url: "https://127.0.0.1:8443"))
    }

    func testResultDescriptionPrintsTheWholeResponse() {
        let result = APNsResult.response(
            APNsResponse(
                status: 410, apnsID: "id-1", apnsUniqueID: "u-1", reason: .unregistered,
                timestamp: Date(timeIntervalSince1970: 1_700_000_000.5), attempts: 2))
        XCTAssertEqual(
            result.description,
            "status=410 attempts=2 apns-id=id-1 apns-unique-id=u-1 reason=Unregistered timestamp=1700000000500")
    }
}

final class APNsCredentialsTests: XCTestCase {
    func testLoadsCredentialsFromP8FileAndRejectsGarbage() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let credentials = try APNsCredentials(teamID: "T", keyID: "K", privateKeyPath: pair.privateKeyPath)
        XCTAssertEqual(credentials.teamID, "T")
        XCTAssertFalse(try credentials.key.providerToken(keyID: "K", teamID: "T", issuedAt: 1).isEmpty)
        XCTAssertThrowsError(try APNsCredentials(teamID: "T", keyID: "K", privateKeyPEM: "not a key"))
    }
}
