import APNsClient
import Foundation
import XCTest

final class APNsHeaderRulesTests: XCTestCase {
    private let token = String(repeating: "ab", count: 32)
    private let alert = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
    private let silent = Array(#"{"aps":{"content-available":1}}"#.utf8)

    private func request(
        token: String? = nil, payload: [UInt8]? = nil, topic: String = "com.example.app", pushType: APNsPushType? = nil,
        priority: APNsPriority? = nil, collapseID: String? = nil, apnsID: String? = nil, expiration: Date? = nil
    ) -> APNsRequest {
        APNsRequest(
            deviceToken: token ?? self.token, payload: payload ?? alert, topic: topic, pushType: pushType,
            priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }

    private func violation(_ request: APNsRequest) -> APNsViolation? {
        do {
            _ = try APNsHeaderRules.prepare(request)
            return nil
        } catch {
            return error
        }
    }

    func testInfersAlertForVisiblePayload() throws {
        let prepared = try APNsHeaderRules.prepare(request())
        XCTAssertEqual(prepared.pushType, .alert)
        XCTAssertNil(prepared.priority)
        XCTAssertEqual(prepared.topic, "com.example.app")
        XCTAssertEqual(prepared.path, "/3/device/" + token)
    }

    func testInfersBackgroundWithPriorityFiveForSilentContentAvailable() throws {
        let prepared = try APNsHeaderRules.prepare(request(payload: silent))
        XCTAssertEqual(prepared.pushType, .background)
        XCTAssertEqual(prepared.priority, .powerConsidered)
    }

    func testContentAvailableWithSoundOrBadgeIsAlert() throws {
        for payload in [
            #"{"aps":{"content-available":1,"sound":"a"}}"#, #"{"aps":{"content-available":1,"badge":2}}"#,
            #"{"aps":{"content-available":1,"alert":{"title":"t"}}}"#, #"{"aps":{"content-available":0}}"#,
            #"{"data":1}"#,
        ] {
            XCTAssertEqual(try APNsHeaderRules.prepare(request(payload: Array(payload.utf8))).pushType, .alert, payload)
        }
    }

    func testContentAvailableIsReadAsTheJSONTypeItIs() throws {
        let background = [
            #"{"aps":{"content-available":1}}"#, #"{"aps":{"content-available":true}}"#,
            #"{"aps":{"content-available":1.0}}"#,
        ]
        for payload in background {
            XCTAssertEqual(
                try APNsHeaderRules.prepare(request(payload: Array(payload.utf8))).pushType, .background, payload)
        }
        let alert = [
            #"{"aps":{"content-available":false}}"#, #"{"aps":{"content-available":"1"}}"#,
            #"{"aps":{"content-available":1.5}}"#, #"{"aps":{"content-available":2}}"#,
            #"{"aps":{"content-available":null}}"#, #"{"aps":{"content-available":1,"alert":null}}"#,
        ]
        for payload in alert {
            XCTAssertEqual(try APNsHeaderRules.prepare(request(payload: Array(payload.utf8))).pushType, .alert, payload)
        }
    }

    func testInferenceRejectsDuplicateKeys() {
        let ambiguous = #"{"aps":{"content-available":1},"aps":{"alert":"hi"}}"#
        XCTAssertEqual(violation(request(payload: Array(ambiguous.utf8))), .payloadNotJSONObject)
    }

    func testRejectsExplicitImmediatePriorityForBackground() {
        XCTAssertEqual(violation(request(payload: silent, priority: .immediate)), .backgroundWithImmediatePriority)
        XCTAssertEqual(
            violation(request(payload: silent, pushType: .background, priority: .immediate)),
            .backgroundWithImmediatePriority)
    }

    func testKeepsExplicitLowPriorityForBackground() throws {
        let prepared = try APNsHeaderRules.prepare(request(payload: silent, priority: .powerPrioritized))
        XCTAssertEqual(prepared.priority, .powerPrioritized)
    }

    func testAppendsTopicSuffixPerPushType() throws {
        let expected: [APNsPushType: String] = [
            .alert: "com.example.app", .background: "com.example.app", .voip: "com.example.app.voip",
            .complication: "com.example.app.complication", .fileprovider: "com.example.app.pushkit.fileprovider",
            .liveactivity: "com.example.app.push-type.liveactivity", .location: "com.example.app.location-query",
            .pushtotalk: "com.example.app.voip-ptt", .widgets: "com.example.app.push-type.widgets",
            .controls: "com.example.app.push-type.controls", .mdm: "com.example.app",
        ]
        XCTAssertEqual(Set(expected.keys), Set(APNsPushType.allCases))
        for (type, topic) in expected {
            let payload = type == .background ? silent : alert
            XCTAssertEqual(
                try APNsHeaderRules.prepare(request(payload: payload, pushType: type)).topic, topic, "\(type)")
            // A topic that already carries the suffix is kept as is.
            XCTAssertEqual(
                try APNsHeaderRules.prepare(request(payload: payload, topic: topic, pushType: type)).topic, topic)
        }
    }

    func testRejectsTopicWithAnotherPushTypesSuffix() {
        XCTAssertEqual(
            violation(request(topic: "com.example.app.voip", pushType: .alert)),
            .topicDoesNotMatchPushType(topic: "com.example.app.voip", pushType: .alert))
        XCTAssertEqual(
            violation(request(topic: "com.example.app.voip", pushType: .pushtotalk)),
            .topicDoesNotMatchPushType(topic: "com.example.app.voip", pushType: .pushtotalk))
        XCTAssertEqual(violation(request(topic: "")), .emptyTopic)
    }

    func testPayloadLimitIs4096ExceptVoIP5120() throws {
        let body = #"{"aps":{"alert":"x"},"pad":""#
        func payload(_ size: Int) -> [UInt8] {
            Array((body + String(repeating: "a", count: size - body.utf8.count - 2) + #""}"#).utf8)
        }
        XCTAssertEqual(payload(4096).count, 4096)
        XCTAssertNoThrow(try APNsHeaderRules.prepare(request(payload: payload(4096))))
        XCTAssertEqual(violation(request(payload: payload(4097))), .payloadTooLarge(bytes: 4097, limit: 4096))
        XCTAssertNoThrow(try APNsHeaderRules.prepare(request(payload: payload(5120), pushType: .voip)))
        XCTAssertEqual(
            violation(request(payload: payload(5121), pushType: .voip)), .payloadTooLarge(bytes: 5121, limit: 5120))
        XCTAssertEqual(violation(request(payload: [])), .emptyPayload)
    }

    func testCollapseIDLimitIs64Bytes() {
        XCTAssertNoThrow(try APNsHeaderRules.prepare(request(collapseID: String(repeating: "c", count: 64))))
        XCTAssertEqual(violation(request(collapseID: String(repeating: "c", count: 65))), .collapseIDTooLong(bytes: 65))
        // Bytes, not characters: 22 three-byte characters are 66 bytes.
        XCTAssertEqual(violation(request(collapseID: String(repeating: "€", count: 22))), .collapseIDTooLong(bytes: 66))
    }

    func testRejectsHeaderInjectionThroughCollapseIDOrTopic() {
        XCTAssertEqual(
            violation(request(collapseID: "a\r\nauthorization: x")), .controlCharacterInHeader(name: "apns-collapse-id")
        )
        XCTAssertEqual(violation(request(topic: "com.example\napp")), .controlCharacterInHeader(name: "apns-topic"))
    }

    func testDeviceTokenMustBeNonEmptyEvenLengthHexOfAnyLength() {
        XCTAssertEqual(violation(request(token: "")), .emptyDeviceToken)
        XCTAssertEqual(violation(request(token: "abc")), .deviceTokenOddLength)
        XCTAssertEqual(violation(request(token: "zz")), .deviceTokenNotHex)
        XCTAssertEqual(violation(request(token: "ab/../cd")), .deviceTokenNotHex)
        XCTAssertNil(violation(request(token: "ab")))
        XCTAssertNil(violation(request(token: String(repeating: "AF09", count: 40))))  // 160 hex: longer than today
    }

    func testAPNsIDMustBeCanonicalUUIDAndIsLowercased() throws {
        let upper = "9F2C4A1B-0D3E-4F5A-8B6C-7D8E9F0A1B2C"
        XCTAssertEqual(try APNsHeaderRules.prepare(request(apnsID: upper)).apnsID, upper.lowercased())
        for bad in [
            "", "not-a-uuid", "9f2c4a1b0d3e4f5a8b6c7d8e9f0a1b2c", "9f2c4a1b-0d3e-4f5a-8b6c-7d8e9f0a1b2g",
            "{9f2c4a1b-0d3e-4f5a-8b6c-7d8e9f0a1b2c}",
        ] {
            XCTAssertEqual(violation(request(apnsID: bad)), .invalidAPNsID, bad)
        }
    }

    func testExpirationBecomesEpochSecondsAndZeroIsKept() throws {
        XCTAssertEqual(try APNsHeaderRules.prepare(request(expiration: Date(timeIntervalSince1970: 0))).expiration, 0)
        XCTAssertEqual(
            try APNsHeaderRules.prepare(request(expiration: Date(timeIntervalSince1970: 1_900_000_000.7))).expiration,
            1_900_000_000)
        XCTAssertEqual(violation(request(expiration: Date(timeIntervalSince1970: -5))), .invalidExpiration)
    }

    func testInferenceNeedsAJSONObject() {
        XCTAssertEqual(violation(request(payload: Array("[1]".utf8))), .payloadNotJSONObject)
        XCTAssertEqual(violation(request(payload: Array("{".utf8))), .payloadNotJSONObject)
        // With an explicit push type the payload is not parsed (the hot path stays cheap).
        XCTAssertNil(violation(request(payload: Array("[1]".utf8), pushType: .alert)))
    }
}
