import FCMClient
import Foundation
import JSON
import JWTSigner
import TestSupport
import XCTest

/// What this module produces, judged by the strict FCM stand-in's own rules (`Tests/Support/fcm_rules.py`,
/// Python `cryptography`): the token request must win an access token and the mapped message must pass
/// `messages:send`'s schema, so the end-to-end tests that come with the transport start from agreeing halves.
final class MockFCMRulesTests: XCTestCase {
    private let prelude = """
        import json, time
        sys.path.insert(0, sys.argv[1])
        import fcm_rules

        """

    private var supportDirectory: String { TestPython.packageRoot.appendingPathComponent("Tests/Support").path }

    func testMockTokenEndpointAcceptsOurAssertionAndRefusesItForAnotherAudience() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let accountPath = fixture.pair.directory + "/service-account.json"
        try Data(fixture.json(["token_uri": "https://127.0.0.1:9/token"])).write(to: URL(fileURLWithPath: accountPath))
        let account = try ServiceAccount(contentsOfFile: accountPath)
        let request = try AccessTokenRequest(account: account, issuedAt: Int(Date().timeIntervalSince1970))
        let bodyPath = fixture.pair.directory + "/body.txt"
        try Data(request.body).write(to: URL(fileURLWithPath: bodyPath))
        let script =
            prelude + """
                account = fcm_rules.load_service_account(open(sys.argv[2], "rb").read())
                body = open(sys.argv[3], "rb").read()
                accounts = {account.private_key_id: account}
                for uri in ("https://127.0.0.1:9/token", "https://oauth2.googleapis.com/token"):
                    result = fcm_rules.check_assertion_request(sys.argv[4], body, accounts, uri, time.time())
                    print("accepted" if result == account else result.body["error"])
                """
        let output = try TestPython.run(
            script, [supportDirectory, accountPath, bodyPath, AccessTokenRequest.contentType])
        XCTAssertEqual(output, "accepted\ninvalid_grant\n")
    }

    func testMockSendRulesAcceptOurMappedMessagesAndRejectAHandMadeBadOne() throws {
        let sections: [JSONValue] = [
            [:],
            [
                "notification": [
                    "title": "Hi", "body": "b", "icon": "i", "color": "#112233", "android_channel_id": "c",
                    "body_loc_args": ["x"],
                ],
                "data": ["n": 1, "o": ["deep": [true, nil]], "s": "t"],
                "time_to_live": 60, "priority": "normal", "collapse_key": "k", "dry_run": true,
            ],
            ["data": ["big": .string(String(repeating: "é", count: 1800))]],
        ]
        var lines = ""
        for section in sections {
            let template = try FCMMessageTemplate(section: section, instanceID: "i", publishID: "p")
            lines += Base64URL.encode(template.body(token: "device-\"1\"")) + "\n"
        }
        lines += Base64URL.encode(Array(#"{"message":{"token":"t","data":{"n":1}}}"#.utf8)) + "\n"
        let directory = try TestKeys.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bodiesPath = directory + "/bodies.txt"
        try lines.write(toFile: bodiesPath, atomically: true, encoding: .utf8)
        let script =
            prelude + """
                import base64
                for line in open(sys.argv[2]):
                    line = line.strip()
                    body = base64.urlsafe_b64decode(line + "=" * (-len(line) % 4))
                    message, validate_only, error = fcm_rules.check_send(body)
                    print("ok" if error is None else error.body["error"]["message"], validate_only)
                """
        let output = try TestPython.run(script, [supportDirectory, bodiesPath])
        XCTAssertEqual(
            output.split(separator: "\n"),
            [
                "ok False", "ok True", "ok False",
                "Invalid value at 'message.data[0].value': (TYPE_STRING), 1 False",
            ])
    }
}
