import APNsClient
import Foundation
import JSON
import XCTest

/// Channel management and broadcast requests as built and parsed without sockets.
final class APNsBroadcastRequestTests: XCTestCase {
    let app = APNsBundleID("com.example.app")!
    let id = APNsChannelID("+/8AAAAAAAAAAAAAAAAAAA==")!

    func testChannelIDAcceptsStandardAndURLSafeFormsAndNormalisesToStandard() {
        XCTAssertEqual(APNsChannelID("dHN0LXNyY2gtY2hubA==")?.rawValue, "dHN0LXNyY2gtY2hubA==")
        XCTAssertEqual(APNsChannelID("dHN0LXNyY2gtY2hubA")?.rawValue, "dHN0LXNyY2gtY2hubA==")
        XCTAssertEqual(APNsChannelID("-_8AAAAAAAAAAAAAAAAAAA")?.rawValue, "+/8AAAAAAAAAAAAAAAAAAA==")
        XCTAssertEqual(id.urlSafe, "-_8AAAAAAAAAAAAAAAAAAA")
        XCTAssertEqual(APNsChannelID(id.urlSafe), id)
    }

    func testChannelIDRejectsHostileAndMalformedText() {
        for bad in [
            "", "a", "abcde", "ab=c", "abc===", "abc%2F", "a b=", "ab\r\nx", "+-ab", "/_ab", "é123",
            String(repeating: "A", count: APNsChannelID.maxLength + 4), "dHN0LXNyY2gtY2hubA=",
        ] {
            XCTAssertNil(APNsChannelID(bad), bad)
        }
        XCTAssertNotNil(APNsChannelID(String(repeating: "A", count: APNsChannelID.maxLength)))
    }

    func testBundleIDAllowsOnlyBundleCharacters() {
        XCTAssertNotNil(APNsBundleID("com.example-app.Widget2"))
        for bad in ["", "com/example", "com.example?x", "com example", "..%2F", String(repeating: "a", count: 156)] {
            XCTAssertNil(APNsBundleID(bad), bad)
        }
    }

    func testManagementRequestsFollowApplesTable() {
        let create = APNsChannelRequest.create(.mostRecentMessageStored)
        XCTAssertEqual(create.method, "POST")
        XCTAssertEqual(create.path(bundleID: app), "/1/apps/com.example.app/channels")
        XCTAssertEqual(create.successStatus, 201)
        XCTAssertEqual(
            JSONValue.parse(create.body),
            .object(["message-storage-policy": .int(1), "push-type": .string("LiveActivity")]))
        XCTAssertFalse(create.headers().contains { $0.hasPrefix("apns-channel-id") })

        let read = APNsChannelRequest.read(id)
        XCTAssertEqual([read.method, read.path(bundleID: app)], ["GET", "/1/apps/com.example.app/channels"])
        XCTAssertEqual(
            read.headers(requestID: "0c3a5f2e-1b2c-4d5e-8f90-123456789abc"),
            ["apns-channel-id: +/8AAAAAAAAAAAAAAAAAAA==", "apns-request-id: 0c3a5f2e-1b2c-4d5e-8f90-123456789abc"])
        XCTAssertEqual(read.body, [])

        let delete = APNsChannelRequest.delete(id)
        XCTAssertEqual([delete.method, delete.path(bundleID: app)], ["DELETE", "/1/apps/com.example.app/channels"])
        XCTAssertEqual(delete.successStatus, 204)

        let list = APNsChannelRequest.list
        XCTAssertEqual([list.method, list.path(bundleID: app)], ["GET", "/1/apps/com.example.app/all-channels"])
        XCTAssertEqual(list.headers(), [])
    }

    func testBroadcastRequestHeadersHaveChannelAndNoTopic() throws {
        let request = APNsBroadcastRequest(
            channelID: id, payload: Array(#"{"aps":{"event":"end","timestamp":1}}"#.utf8))
        XCTAssertEqual(request.path(bundleID: app), "/4/broadcasts/apps/com.example.app")
        XCTAssertEqual(
            request.headers,
            [
                "apns-channel-id: +/8AAAAAAAAAAAAAAAAAAA==", "apns-push-type: liveactivity",
                "apns-priority: 5", "apns-expiration: 0", "content-type: application/json",
            ])
        XCTAssertFalse(request.headers.contains { $0.lowercased().hasPrefix("apns-topic") })
        try request.validate()
    }

    func testBroadcastValidationRefusesEmptyOversizedAndBadFields() {
        func violation(_ request: APNsBroadcastRequest) -> APNsBroadcastViolation? {
            do { try request.validate() } catch { return error }
            return nil
        }
        XCTAssertEqual(violation(APNsBroadcastRequest(channelID: id, payload: [])), .emptyPayload)
        XCTAssertNil(violation(APNsBroadcastRequest(channelID: id, payload: Array(repeating: 0x20, count: 5120))))
        XCTAssertEqual(
            violation(APNsBroadcastRequest(channelID: id, payload: Array(repeating: 0x20, count: 5121))),
            .payloadTooLarge(bytes: 5121))
        XCTAssertEqual(
            violation(APNsBroadcastRequest(channelID: id, payload: [0x7B], expiration: -1)), .invalidExpiration)
        XCTAssertEqual(
            violation(APNsBroadcastRequest(channelID: id, payload: [0x7B], requestID: "x\r\ny")),
            .invalidRequestID)
    }

    func testParsesCreateListReadAndErrorAnswers() {
        let created = APNsBroadcastResponse.parse(
            status: 201,
            headers: [
                "apns-channel-id": id.rawValue,
                "apns-request-id": "r",
            ], body: [])
        XCTAssertEqual(created.createdChannel, id)
        XCTAssertTrue(created.isSuccess)
        XCTAssertNil(created.reason)

        let list = APNsBroadcastResponse.parse(
            status: 200, headers: [:], body: Array(#"{"channels":["dHN0LXNyY2gtY2hubA==","not base64!",7]}"#.utf8))
        XCTAssertEqual(list.channels, [APNsChannelID("dHN0LXNyY2gtY2hubA==")!])
        XCTAssertNil(APNsBroadcastResponse.parse(status: 200, headers: [:], body: Array("{}".utf8)).channels)

        let refused = APNsBroadcastResponse.parse(
            status: 400, headers: [:], body: Array(#"{"reason":"ChannelNotRegistered"}"#.utf8))
        XCTAssertEqual(refused.reason, .channelNotRegistered)
        XCTAssertFalse(refused.isSuccess)
        let future = APNsBroadcastResponse.parse(
            status: 400, headers: [:], body: Array(#"{"reason":"SomethingNew"}"#.utf8))
        XCTAssertEqual(future.reason, .unknown("SomethingNew"))
        XCTAssertNil(
            APNsBroadcastResponse.parse(status: 201, headers: ["apns-channel-id": "bad id"], body: []).createdChannel)
    }

    func testAppleHostsPerEnvironment() {
        XCTAssertEqual(
            APNsBroadcastEndpoints.sandbox.managementURL, "https://api-manage-broadcast.sandbox.push.apple.com:2195")
        XCTAssertEqual(
            APNsBroadcastEndpoints.production.managementURL, "https://api-manage-broadcast.push.apple.com:2196")
        XCTAssertEqual(APNsBroadcastEndpoints.sandbox.sendURL, "https://api-broadcast.sandbox.push.apple.com:443")
        XCTAssertEqual(APNsBroadcastEndpoints.production.sendURL, "https://api-broadcast.push.apple.com:443")
        XCTAssertEqual(APNsBroadcastEndpoints(managementURL: "https://a/", sendURL: "https://b//").sendURL, "https://b")
    }

    func testBroadcastTransportFailuresAreRetryableExceptFatal() {
        XCTAssertTrue(
            APNsBroadcastFailure.transport(APNsTransportError(kind: .connection, code: 7, message: "")).isRetryable)
        XCTAssertTrue(
            APNsBroadcastFailure.transport(APNsTransportError(kind: .timeout, code: 28, message: "")).isRetryable)
        XCTAssertFalse(
            APNsBroadcastFailure.transport(APNsTransportError(kind: .fatal, code: 60, message: "")).isRetryable)
        XCTAssertFalse(APNsBroadcastFailure.shutdown.isRetryable)
    }
}
