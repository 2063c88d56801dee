import APNsClient
import Foundation
import XCTest

final class APNsReasonTests: XCTestCase {
    func testEveryReasonInAppleListRoundTrips() {
        let apple = [
            "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
            "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
            "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
            "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken",
            "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken", "BadPath", "MethodNotAllowed", "ExpiredToken",
            "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests",
            "InternalServerError", "ServiceUnavailable", "Shutdown",
            // Broadcast channels.
            "FeatureNotEnabled", "MissingChannelId", "BadChannelId", "ChannelNotRegistered",
            "CannotCreateChannelConfig",
            "BadRequestParams", "BadRequestPayload", "MissingPushType", "TopicMismatch",
        ]
        XCTAssertEqual(APNsReason.known.map(\.rawValue), apple)
        for raw in apple {
            let reason = APNsReason(rawValue: raw)
            if case .unknown = reason { XCTFail("\(raw) parsed as unknown") }
            XCTAssertEqual(reason.rawValue, raw)
        }
    }

    func testUnknownReasonIsKeptVerbatim() {
        XCTAssertEqual(APNsReason(rawValue: "BadPayload"), .unknown("BadPayload"))
        XCTAssertEqual(APNsReason(rawValue: "BadPayload").rawValue, "BadPayload")
        XCTAssertEqual(APNsReason(rawValue: "baddevicetoken"), .unknown("baddevicetoken"))  // case matters
    }

    func testParsesErrorBodyWith410Timestamp() {
        let parsed = APNsResponse.parseBody(Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        XCTAssertEqual(parsed.reason, .unregistered)
        XCTAssertEqual(parsed.timestamp?.timeIntervalSince1970 ?? 0, 1_700_000_000.123, accuracy: 0.0005)
        let empty = APNsResponse.parseBody([])
        XCTAssertNil(empty.reason)
        XCTAssertNil(APNsResponse.parseBody(Array("not json".utf8)).reason)
    }

    func testParsesTimestampAsIntegerDoubleOrStringAndIgnoresOtherTypes() {
        for body in [
            #"{"reason":"Unregistered","timestamp":1700000000123}"#,
            #"{"reason":"Unregistered","timestamp":1.700000000123e12}"#,
            #"{"reason":"Unregistered","timestamp":"1700000000123"}"#,
        ] {
            let parsed = APNsResponse.parseBody(Array(body.utf8))
            XCTAssertEqual(parsed.reason, .unregistered, body)
            XCTAssertEqual(parsed.timestamp?.timeIntervalSince1970 ?? 0, 1_700_000_000.123, accuracy: 0.0005, body)
        }
        for body in [
            #"{"reason":"Unregistered","timestamp":true}"#, #"{"reason":"Unregistered","timestamp":"nan"}"#,
            #"{"reason":"Unregistered","timestamp":null}"#,
        ] {
            XCTAssertNil(APNsResponse.parseBody(Array(body.utf8)).timestamp, body)
        }
        XCTAssertNil(APNsResponse.parseBody(Array(#"{"reason":7}"#.utf8)).reason, "a reason that is not a string")
        XCTAssertNil(APNsResponse.parseBody(Array(#"["Unregistered"]"#.utf8)).reason)
    }
}
