import Foundation
import JSON
import TestSupport
import XCTest

/// Smoke tests of the mock launcher: the mock starts, serves TLS + HTTP/2 with Apple's answers, records what it
/// saw, obeys the control API and stops. Requests go through the `curl` CLI (HTTP/2, custom CA) and provider
/// tokens are signed with the `openssl` CLI, so these tests depend on no other module of the project.
final class MockAPNsLaunchTests: XCTestCase {
    private let token = String(repeating: "ab", count: 32)
    private let topic = "com.example.app"
    private let keyID = "KEY1234567"
    private let teamID = "TEAM123456"
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try run("/usr/bin/openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path("key.pem")])
        try run("/usr/bin/openssl", ["ec", "-in", path("key.pem"), "-pubout", "-out", path("pub.pem")])
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testServesHTTP2OverTLSAndRejectsRequestWithoutProviderToken() throws {
        let mock = try startMock()
        defer { mock.stop() }

        let answer = try curl(mock, jwt: nil)
        XCTAssertEqual(answer.status, 403)
        XCTAssertEqual(answer.httpVersion, "2")
        XCTAssertEqual(answer.reason, "MissingProviderToken")

        let requests = try mock.requests()
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests.first?.token, token)
        XCTAssertEqual(requests.first?.status, 403)
        XCTAssertEqual(requests.first?.reason, "MissingProviderToken")
        XCTAssertEqual(requests.first?.header("apns-topic"), topic)
        XCTAssertNil(requests.first?.jwt)
        let stats = try mock.stats()
        XCTAssertEqual(stats.requests, 1)
        XCTAssertEqual(stats.count(status: 403), 1)
        XCTAssertEqual(stats.perToken[token], ["403": 1])
    }

    func testSignedRequestIsAcceptedAndScriptedBehaviourAnswers410() throws {
        let mock = try startMock()
        defer { mock.stop() }
        let jwt = try signJWT(iat: Int(Date().timeIntervalSince1970))

        let accepted = try curl(mock, jwt: jwt)
        XCTAssertEqual(accepted.status, 200)
        XCTAssertEqual(accepted.body, "")
        XCTAssertNotNil(accepted.headers["apns-id"])

        try mock.setBehaviour(token: token, .init(status: 410, reason: "Unregistered", timestamp: 1_700_000_000_000))
        let gone = try curl(mock, jwt: jwt)
        XCTAssertEqual(gone.status, 410)
        XCTAssertEqual(gone.reason, "Unregistered")
        XCTAssertTrue(gone.body.contains("\"timestamp\":1700000000000"), gone.body)

        let requests = try mock.requests(token: token)
        XCTAssertEqual(requests.map(\.status), [200, 410])
        XCTAssertEqual(requests.first?.jwt?.kid, keyID)
        XCTAssertEqual(requests.first?.jwt?.iss, teamID)
        XCTAssertEqual(requests.first?.payload?["aps"]?["alert"], .string("hi"))
        XCTAssertEqual(requests.first?.apnsID, accepted.headers["apns-id"])

        try mock.reset()
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertEqual(try curl(mock, jwt: jwt).status, 200, "reset removes behaviours")
    }

    func testDropBehaviourClosesTheConnectionWithoutAnswer() throws {
        let mock = try startMock()
        defer { mock.stop() }
        try mock.setBehaviour(token: token, .init(times: 1, action: .drop))
        let jwt = try signJWT(iat: Int(Date().timeIntervalSince1970))
        XCTAssertThrowsError(try curl(mock, jwt: jwt), "curl must fail: no HTTP answer")
        let recorded = try mock.waitForRequests(count: 1)
        XCTAssertEqual(recorded.first?.action, .drop)
        XCTAssertEqual(try mock.stats().connectionsDropped, 1)
        XCTAssertEqual(try curl(mock, jwt: jwt).status, 200, "times: 1 applies once")
    }

    func testExpiredProviderTokenIsRejected() throws {
        let mock = try startMock()
        defer { mock.stop() }
        let answer = try curl(mock, jwt: try signJWT(iat: Int(Date().timeIntervalSince1970) - 3700))
        XCTAssertEqual(answer.status, 403)
        XCTAssertEqual(answer.reason, "ExpiredProviderToken")
    }

    func testClockOffsetMakesAFutureTokenCurrent() throws {
        let mock = try startMock()
        defer { mock.stop() }
        let future = try signJWT(iat: Int(Date().timeIntervalSince1970) + 3000)
        XCTAssertEqual(try curl(mock, jwt: future).reason, "InvalidProviderToken")
        XCTAssertEqual(try mock.setConfig(.init(clockOffsetSeconds: 3000)).clockOffsetSeconds, 3000)
        XCTAssertEqual(try curl(mock, jwt: future).status, 200)
    }

    func testControlAPIRejectsErrorBehaviourWithoutReason() throws {
        let mock = try startMock()
        defer { mock.stop() }
        XCTAssertThrowsError(try mock.setBehaviour(token: token, .init(status: 500))) { error in
            guard case MockAPNsError.controlFailed(_, let status, _) = error else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(status, 400)
        }
        let config = try mock.setConfig(.init(delayMs: 5, record: false))
        XCTAssertEqual(config.delayMs, 5)
        XCTAssertEqual(config.record, false)
        XCTAssertEqual(config.maxStreams, 1000)
    }

    func testStopEndsTheProcessAndLaterCallsFail() throws {
        let mock = try startMock()
        XCTAssertTrue(mock.isRunning)
        mock.stop()
        XCTAssertFalse(mock.isRunning)
        mock.stop()  // idempotent
        XCTAssertThrowsError(try mock.stats()) { XCTAssertEqual($0 as? MockAPNsError, .stopped) }
    }

    func testStartFailsWithLaunchErrorForMissingPython() {
        XCTAssertThrowsError(try MockAPNs.start(keys: [], topics: [topic], python: "/nonexistent/python3")) {
            guard case MockAPNsError.launchFailed = $0 else { return XCTFail("unexpected \($0)") }
        }
    }

    func testStartFailsWhenTheMockExitsBeforeListening() {
        // A key file that does not exist makes the script exit with a traceback before printing its line.
        XCTAssertThrowsError(
            try MockAPNs.start(
                keys: [(keyID: keyID, publicKeyPath: path("missing.pem"))],
                topics: [topic])
        ) {
            guard case MockAPNsError.noStartupLine = $0 else { return XCTFail("unexpected \($0)") }
        }
    }

    // MARK: Helpers

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func startMock() throws -> MockAPNs {
        try MockAPNs.start(teamID: teamID, keys: [(keyID: keyID, publicKeyPath: path("pub.pem"))], topics: [topic])
    }

    private struct CurlAnswer {
        var status: Int
        var httpVersion: String
        var headers: [String: String]
        var body: String
        var reason: String? {
            JSONValue.parse(Array(body.utf8))?["reason"]?.stringValue
        }
    }

    /// One APNs-style POST through the curl CLI over HTTP/2, trusting the mock's CA.
    private func curl(_ mock: MockAPNs, jwt: String?) throws -> CurlAnswer {
        try Data(#"{"aps":{"alert":"hi"}}"#.utf8).write(to: URL(fileURLWithPath: path("payload.json")))
        var arguments = [
            "-sS", "--http2", "--cacert", mock.caFile, "-o", path("body"), "-D", path("headers"),
            "-w", "%{http_code} %{http_version}", "-X", "POST", "--data-binary", "@" + path("payload.json"),
            "-H", "apns-topic: \(topic)", "-H", "apns-push-type: alert", "-H", "apns-priority: 10",
        ]
        if let jwt { arguments += ["-H", "authorization: bearer \(jwt)"] }
        arguments.append("\(mock.baseURL)/3/device/\(token)")
        let out = try run("/usr/bin/curl", arguments).split(separator: " ")
        XCTAssertEqual(out.count, 2)
        var headers: [String: String] = [:]
        for line in try String(contentsOfFile: path("headers"), encoding: .utf8).split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 {
                headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        let body = (try? String(contentsOfFile: path("body"), encoding: .utf8)) ?? ""
        return CurlAnswer(status: Int(out[0]) ?? -1, httpVersion: String(out[1]), headers: headers, body: body)
    }

    /// An ES256 provider token signed by the openssl CLI (whose DER signature becomes JWS's raw r||s).
    private func signJWT(iat: Int) throws -> String {
        let header = base64url(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = base64url(Data(#"{"iss":"\#(teamID)","iat":\#(iat)}"#.utf8))
        let input = "\(header).\(claims)"
        try Data(input.utf8).write(to: URL(fileURLWithPath: path("input")))
        try run(
            "/usr/bin/openssl", ["dgst", "-sha256", "-sign", path("key.pem"), "-out", path("sig.der"), path("input")])
        let der = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path("sig.der"))))
        return "\(input).\(base64url(try rawSignature(fromDER: der)))"
    }

    /// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } → 32-byte big-endian r followed by s.
    private func rawSignature(fromDER der: [UInt8]) throws -> Data {
        var index = 2  // SEQUENCE tag and (short-form, < 128) length
        guard der.count > 8, der[0] == 0x30, der[1] < 0x80 else { throw SigningError.badDER }
        var raw = Data()
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { throw SigningError.badDER }
            let length = Int(der[index + 1])
            var integer = Array(der[(index + 2)..<(index + 2 + length)])
            while integer.count > 32, integer.first == 0 { integer.removeFirst() }
            guard integer.count <= 32 else { throw SigningError.badDER }
            raw.append(Data(repeating: 0, count: 32 - integer.count) + integer)
            index += 2 + length
        }
        return raw
    }

    private enum SigningError: Error { case badDER }

    private func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        try ChildProcess.checked(executable, arguments)
    }
}
