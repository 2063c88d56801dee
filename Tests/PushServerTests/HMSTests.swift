import BeamsModel
import Foundation
import JSON
import Locking
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// Huawei Push Kit without sockets: the publish section's mapping and limits, the answers' meaning, the token
/// answer, the device token rule, the stored plan.
final class HMSTests: XCTestCase {
    private func section(_ json: String) throws(BeamsError) -> HMSTemplate {
        try HMSTemplate.parse(JSONValue.parse(Array(json.utf8))?.objectValue ?? [:], instanceID: "i", publishID: "p")
    }

    private func refusal(_ json: String) -> BeamsError? {
        do {
            _ = try section(json)
            return nil
        } catch {
            return error
        }
    }

    func testSectionMapsDataToAStringAndAddsOpenAppClickActionToANotification() throws {
        let template = try section(
            #"{"notification":{"title":"T","body":"B"},"data":{"k":1},"android":{"urgency":"HIGH"}}"#)
        XCTAssertEqual(template.message["notification"], .object(["title": "T", "body": "B"]))
        let data = try XCTUnwrap(template.message["data"]?.stringValue)
        XCTAssertEqual(
            JSONValue.parse(Array(data.utf8)), .object(["k": 1, "pusher": ["instanceId": "i", "publishId": "p"]]))
        let android = try XCTUnwrap(template.message["android"]?.objectValue)
        XCTAssertEqual(android["urgency"], "HIGH")
        XCTAssertEqual(android["notification"], .object(["click_action": ["type": 3]]))
    }

    func testDataOnlySectionHasNoAndroidNotification() throws {
        let template = try section(#"{"data":"raw text"}"#)
        XCTAssertEqual(template.message, ["data": "raw text"])
    }

    func testSectionRefusals() {
        for (json, path) in [
            (#"{}"#, "`hms`"), (#"{"foo":1}"#, "`hms.foo`"), (#"{"data":1}"#, "`hms.data`"),
            (#"{"android":{"urgency":"URGENT"}}"#, "`hms.android.urgency`"),
            (#"{"android":{"collapse_key":101}}"#, "`hms.android.collapse_key`"),
            (#"{"android":{"notification":{"click_action":{"type":1}}}}"#, "`hms.android.notification.click_action`"),
            (#"{"android":{"notification":{"click_action":{"type":2}}}}"#, "`hms.android.notification.click_action`"),
            (#"{"notification":{"title":1}}"#, "`hms.notification.title`"),
        ] {
            let beams = refusal(json)
            XCTAssertEqual(beams?.status.code, 422, json)
            XCTAssertTrue(beams.map { "\($0)".contains(path) } == true, "\(json): \(String(describing: beams))")
        }
    }

    func testMessageOver4096BytesIsRefusedAtIntake() throws {
        let big = String(repeating: "x", count: 4096)
        XCTAssertEqual(refusal(#"{"data":"\#(big)"}"#)?.status.code, 422)
        XCTAssertNil(refusal(#"{"data":"\#(String(repeating: "x", count: 4000))"}"#))
    }

    func testPublishRequestChecksTheSectionAndPlanStoresIt() throws {
        let bad = #"{"interests":["a"],"hms":{"data":5}}"#
        XCTAssertThrowsError(try PublishRequest.parse(Array(bad.utf8), kind: .interests))
        let body = Array(#"{"interests":["a"],"hms":{"notification":{"title":"T"}}}"#.utf8)
        let request = try PublishRequest.parse(body, kind: .interests)
        XCTAssertEqual(request.platforms, ["hms"])
        let plan = try PublishPlan(request: request, body: body, instanceID: "i", publishID: "p")
        XCTAssertTrue(plan.carries(.hms))
        XCTAssertFalse(plan.carries(.fcm))
        let decoded = try PublishPlan(decoding: plan.encoded())
        XCTAssertEqual(decoded.hmsMessage, plan.hmsMessage)
        XCTAssertEqual(JSONValue.parse(plan.encoded())?.objectValue?["v"], .int(6))
    }

    func testAnswerCodes() {
        func answer(_ status: Int, _ json: String, retryAfter: String? = nil) -> HMSAnswer {
            HMSAnswer.classify(status: status, body: Array(json.utf8), retryAfter: retryAfter)
        }
        XCTAssertEqual(answer(200, #"{"code":"80000000","msg":"Success"}"#), .success)
        let partial = #"{"code":"80100000","msg":"{\"success\":1,\"failure\":2,\"illegal_tokens\":[\"a\",\"b\"]}"}"#
        XCTAssertEqual(answer(200, partial), .partial(illegalTokens: ["a", "b"]))
        XCTAssertEqual(answer(401, #"{"code":"80200003"}"#), .accessTokenRejected(code: "80200003"))
        XCTAssertEqual(answer(200, #"{"code":"80200001"}"#), .accessTokenRejected(code: "80200001"))
        XCTAssertEqual(answer(503, "", retryAfter: "2"), .retry(reason: "HTTP503", retryAfter: 2))
        XCTAssertEqual(answer(502, "oops"), .retry(reason: "HTTP502", retryAfter: nil))
        XCTAssertEqual(answer(200, #"{"code":"81000001"}"#), .retry(reason: "81000001", retryAfter: nil))
        XCTAssertEqual(answer(400, #"{"code":"80300007"}"#), .allTokensInvalid)
        XCTAssertEqual(answer(400, #"{"code":"80300008"}"#), .failed(reason: "80300008"))
        XCTAssertEqual(answer(403, #"{"code":"80300002"}"#), .failed(reason: "80300002"))
        XCTAssertEqual(answer(200, #"{"code":"12345678"}"#), .failed(reason: "UnknownError"))
        XCTAssertEqual(answer(200, "not json"), .failed(reason: "UnknownError"))
    }

    func testTokenAnswer() {
        let good = HMSSenderConfiguration.parseToken(
            status: 200, body: Array(#"{"access_token":"CF\/x","expires_in":3600,"token_type":"Bearer"}"#.utf8))
        guard case .success(let token) = good else { return XCTFail("\(good)") }
        XCTAssertEqual(token.token, "CF/x")
        XCTAssertEqual(token.expiresIn, 3600)
        let refused = HMSSenderConfiguration.parseToken(
            status: 400,
            body: Array(#"{"error":1101,"sub_error":12304,"error_description":"invalid client_secret"}"#.utf8))
        XCTAssertEqual(refused.failureValue, .refused("invalid client_secret"))
        XCTAssertEqual(HMSSenderConfiguration.parseToken(status: 503, body: []).failureValue, .unavailable("HTTP 503"))
        XCTAssertEqual(
            String(decoding: HMSSenderConfiguration.formBody(clientID: "1", clientSecret: "a+b/c=&d"), as: UTF8.self),
            "grant_type=client_credentials&client_id=1&client_secret=a%2Bb%2Fc%3D%26d")
    }

    func testDeviceTokenRule() throws {
        XCTAssertEqual(try DeviceToken.hms("IQAAAACy0kYkAAC"), "IQAAAACy0kYkAAC")
        XCTAssertNoThrow(try DeviceToken.hms(String(repeating: "a", count: 512)))
        for bad in ["", String(repeating: "a", count: 513), "has space", "tab\t", "ünïcode"] {
            XCTAssertThrowsError(try DeviceToken.hms(bad), bad)
        }
    }

    func testConfigReadsSecretFromValueOrFileAndRefusesMissingOrBadFields() throws {
        let directory = NSTemporaryDirectory() + "hms-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secretFile = directory + "/hms-secret"
        try "file-secret\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        func config(_ section: String) -> Data {
            Data(
                #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","hms":\#(section)}]}"#
                    .utf8)
        }
        let (inline, _) = try ServerConfig.parse(config(#"{"appId":"104433211","clientSecret":"inline"}"#))
        let settings = try XCTUnwrap(inline.instances.first?.hms)
        XCTAssertEqual(settings.appID, "104433211")
        XCTAssertEqual(settings.clientID, "104433211", "the client ID defaults to the app ID")
        XCTAssertEqual(settings.clientSecret, "inline")
        XCTAssertFalse("\(settings)".contains("inline"), "the secret never appears in a description")
        let (fromFile, _) = try ServerConfig.parse(
            config(
                #"{"appId":"1","clientId":"9","clientSecretFile":"\#(secretFile)","endpointOverride":"https://127.0.0.1:1"}"#
            ))
        XCTAssertEqual(fromFile.instances.first?.hms?.clientSecret, "file-secret")
        XCTAssertEqual(fromFile.instances.first?.hms?.clientID, "9")
        XCTAssertEqual(fromFile.instances.first?.hms?.endpointOverride, "https://127.0.0.1:1")
        for (section, path) in [
            (#"{"clientSecret":"x"}"#, "hms.appId"), (#"{"appId":"12/../x","clientSecret":"x"}"#, "hms.appId"),
            (#"{"appId":"1"}"#, "hms.clientSecret"),
            (#"{"appId":"1","clientSecret":"x","endpointOverride":"http://h"}"#, "hms.endpointOverride"),
        ] {
            XCTAssertThrowsError(try ServerConfig.parse(config(section)), section) { error in
                XCTAssertTrue("\(error)".contains(path), "\(section): \(error)")
            }
        }
    }

    func testAccessTokensAreFetchedOnceAndSharedByConcurrentCallers() async {
        let calls = Counter()
        let tokens = HMSAccessTokens(clientID: "1", clientSecret: "s") {
            calls.add()
            try? await Task.sleep(nanoseconds: 20_000_000)
            return .success(("t\(calls.value)", 3600))
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = await tokens.token() } }
        }
        XCTAssertEqual(calls.value, 1)
        let first = try? await tokens.token().get()
        XCTAssertEqual(calls.value, 1)
        // A send that saw the token rejected gets a new one, once.
        let second = try? await tokens.token(rejecting: first?.generation).get()
        XCTAssertEqual(calls.value, 2)
        XCTAssertNotEqual(first?.value, second?.value)
    }

    func testRefusedTokenIsNotAskedForAgainWithinTheRetryPeriod() async {
        let calls = Counter()
        let tokens = HMSAccessTokens(clientID: "1", clientSecret: "s", retryAfterFailure: 60) {
            calls.add()
            return .failure(.refused("invalid client_secret"))
        }
        for _ in 0..<5 { _ = await tokens.token() }
        XCTAssertEqual(calls.value, 1)
        XCTAssertEqual(tokens.refusal, .refused("invalid client_secret"))
    }
}

private final class Counter: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

private extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
