import APNsClient
import Foundation
import TestSupport
import XCTest

/// Answers and error semantics against the strict mock.
final class APNsClientResponseTests: MockAPNsTestCase {
    func testSuccessCarriesAPNsIDAndMockVerifiedTheBearerToken() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let apnsID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
        let result = await send(client, alert(token(1), apnsID: apnsID))
        guard case .response(let response) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.apnsID, apnsID)
        XCTAssertNotNil(response.apnsUniqueID)  // sandbox mock
        XCTAssertEqual(response.attempts, 1)

        // The mock verified the ES256 signature: without the bearer-token code it answers 403 MissingProviderToken
        // and this test fails.
        let seen = try mock.requests()
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen.first?.jwt?.kid, keyID)
        XCTAssertEqual(seen.first?.jwt?.iss, teamID)
        XCTAssertEqual(seen.first?.header("apns-topic"), topic)
        XCTAssertEqual(seen.first?.header("apns-push-type"), "alert")
        XCTAssertEqual(seen.first?.header("apns-id"), apnsID)
        XCTAssertEqual(seen.first?.path, "/3/device/" + token(1))
    }

    func testAPNsGeneratedIDIsReturnedWhenNoneSent() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let result = await send(client, alert(token(2)))
        XCTAssertEqual(result.response?.status, 200)
        let generated = try XCTUnwrap(result.response?.apnsID)
        XCTAssertEqual(try mock.requests().first?.apnsID, generated)
    }

    func testHeadersFollowEachRequestOnAReusedHandle() async throws {
        let mock = try startMock()
        // One connection with one stream: every request reuses the same curl handle and its cached header list.
        let client = try makeClient(connections: 1, streams: 1)
        let apnsID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
        var first = alert(token(1), apnsID: apnsID)
        first.collapseID = "group-1"
        first.expiration = Date(timeIntervalSince1970: 1_900_000_000)
        let second = alert(token(2))
        let third = APNsRequest(
            deviceToken: token(3), payload: Array(#"{"aps":{"content-available":1}}"#.utf8), topic: topic)
        for request in [first, second, third, second] {
            let result = await send(client, request)
            XCTAssertEqual(result.response?.status, 200, "\(result)")
        }
        let seen = try mock.requests()
        XCTAssertEqual(seen.count, 4)
        XCTAssertEqual(seen[0].header("apns-id"), apnsID)
        XCTAssertEqual(seen[0].header("apns-collapse-id"), "group-1")
        XCTAssertEqual(seen[0].header("apns-expiration"), "1900000000")
        XCTAssertNil(seen[1].header("apns-collapse-id"))
        XCTAssertNil(seen[1].header("apns-expiration"))
        XCTAssertNotEqual(seen[1].apnsID, apnsID)
        XCTAssertEqual(seen[2].header("apns-push-type"), "background")
        XCTAssertEqual(seen[2].header("apns-priority"), "5")
        XCTAssertEqual(seen[3].header("apns-push-type"), "alert")
        XCTAssertNil(seen[3].header("apns-priority"))
        XCTAssertEqual(seen.map(\.token), [token(1), token(2), token(3), token(2)])
        for request in seen { XCTAssertEqual(request.headers["authorization"]?.count, 1) }
    }

    func testEveryHeaderRuleViolationIsCaughtLocally() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let silent = Array(#"{"aps":{"content-available":1}}"#.utf8)
        let cases: [(APNsRequest, APNsViolation)] = [
            (APNsRequest(deviceToken: "", payload: [1], topic: topic, pushType: .alert), .emptyDeviceToken),
            (APNsRequest(deviceToken: "abc", payload: [1], topic: topic, pushType: .alert), .deviceTokenOddLength),
            (APNsRequest(deviceToken: "xyxy", payload: [1], topic: topic, pushType: .alert), .deviceTokenNotHex),
            (APNsRequest(deviceToken: token(1), payload: [], topic: topic, pushType: .alert), .emptyPayload),
            (
                APNsRequest(deviceToken: token(1), payload: silent, topic: topic, priority: .immediate),
                .backgroundWithImmediatePriority
            ),
            (
                APNsRequest(
                    deviceToken: token(1), payload: Array(repeating: 0x20, count: 4097), topic: topic,
                    pushType: .alert), .payloadTooLarge(bytes: 4097, limit: 4096)
            ),
            (
                APNsRequest(
                    deviceToken: token(1), payload: silent, topic: topic, pushType: .alert,
                    collapseID: String(repeating: "c", count: 65)), .collapseIDTooLong(bytes: 65)
            ),
            (
                APNsRequest(deviceToken: token(1), payload: silent, topic: topic, pushType: .alert, apnsID: "nope"),
                .invalidAPNsID
            ),
            (
                APNsRequest(deviceToken: token(1), payload: silent, topic: topic + ".voip", pushType: .alert),
                .topicDoesNotMatchPushType(topic: topic + ".voip", pushType: .alert)
            ),
        ]
        for (request, violation) in cases {
            let result = await send(client, request)
            XCTAssertEqual(result, .failure(.invalidRequest(violation)))
        }
        XCTAssertEqual(try mock.stats().requests, 0, "a locally rejected request reached the mock")
        XCTAssertEqual(client.stats().invalidRequests, cases.count)
    }

    func testBadDeviceTokenIsMappedAndNeverRetried() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let bad = token(3, prefix: "bd")
        try mock.setBehaviour(token: bad, .init(status: 400, reason: "BadDeviceToken"))
        let result = await send(client, alert(bad))
        XCTAssertEqual(result.response?.status, 400)
        XCTAssertEqual(result.response?.reason, .badDeviceToken)
        XCTAssertEqual(result.response?.attempts, 1)
        XCTAssertEqual(try mock.stats().perToken[bad], ["400": 1])
    }

    func testRequestErrorsAreMappedWithoutRetry() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let scripted: [(Int, String, APNsReason)] = [
            (400, "DeviceTokenNotForTopic", .deviceTokenNotForTopic), (403, "Forbidden", .forbidden),
            (410, "ExpiredToken", .expiredToken), (413, "PayloadTooLarge", .payloadTooLarge),
            (400, "TopicDisallowed", .topicDisallowed), (400, "SomethingNew", .unknown("SomethingNew")),
        ]
        for (index, (status, raw, reason)) in scripted.enumerated() {
            let device = token(index, prefix: "e0")
            try mock.setBehaviour(token: device, .init(status: status, reason: raw))
            let result = await send(client, alert(device))
            XCTAssertEqual(result.response?.status, status, raw)
            XCTAssertEqual(result.response?.reason, reason, raw)
            XCTAssertEqual(try mock.stats().perToken[device]?.values.reduce(0, +), 1, raw)
        }
    }

    func testUnregisteredCarriesTimestampAsDate() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let gone = token(4, prefix: "90")
        try mock.setBehaviour(token: gone, .init(status: 410, reason: "Unregistered", timestamp: 1_700_000_000_123))
        let response = try await responseOf(client, alert(gone))
        XCTAssertEqual(response.status, 410)
        XCTAssertEqual(response.reason, .unregistered)
        XCTAssertEqual(response.timestamp?.timeIntervalSince1970 ?? 0, 1_700_000_000.123, accuracy: 0.0005)
        XCTAssertEqual(try mock.stats().perToken[gone], ["410": 1])
    }

    func testTooManyRequestsAndServerErrorsAreRetriedThenSucceed() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let scripted: [(Int, String)] = [
            (429, "TooManyRequests"), (500, "InternalServerError"),
            (503, "ServiceUnavailable"),
        ]
        for (index, (status, reason)) in scripted.enumerated() {
            let device = token(index, prefix: "50")
            try mock.setBehaviour(token: device, .init(status: status, reason: reason, times: 2))
            let response = try await responseOf(client, alert(device))
            XCTAssertEqual(response.status, 200, reason)
            XCTAssertEqual(response.attempts, 3, reason)
            XCTAssertEqual(try mock.stats().perToken[device], [String(status): 2, "200": 1], reason)
        }
        XCTAssertEqual(client.stats().retries, 6)
    }

    func testServiceUnavailableForeverStopsAfterMaxAttempts() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let device = token(5, prefix: "53")
        try mock.setBehaviour(token: device, .init(status: 503, reason: "ServiceUnavailable"))
        let response = try await responseOf(client, alert(device))
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(response.reason, .serviceUnavailable)
        XCTAssertEqual(response.attempts, Self.fastRetries.maxAttempts)
        XCTAssertEqual(try mock.stats().perToken[device], ["503": Self.fastRetries.maxAttempts])
    }

    func testUntrustedServerCertificateFailsWithoutRetryOrRequest() async throws {
        let mock = try startMock()
        let client = try makeClient()
        // No CA file: the mock's self-signed chain must not verify against the system store.
        let untrusted = APNsEnvironment.custom(url: mock.baseURL)
        let result = await client.send(alert(token(1)), credentials: credentials, environment: untrusted)
        guard case .failure(.transport(let error, let attempts)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .fatal)
        XCTAssertEqual(attempts, 1)
        XCTAssertEqual(try mock.stats().requests, 0)
        XCTAssertEqual(client.stats().transportFailures, 1)
    }

    func testUnreachableServerFailsAfterBoundedRetries() async throws {
        // A port nobody listens on: bind one, close it, use its number.
        let client = try makeClient()
        let unreachable = APNsEnvironment.custom(url: "https://127.0.0.1:\(try Self.closedPort())")
        let result = await client.send(alert(token(1)), credentials: credentials, environment: unreachable)
        guard case .failure(.transport(let error, let attempts)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .connection)
        XCTAssertEqual(attempts, Self.fastRetries.maxAttempts)
    }

    private static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw XCTSkip("could not bind a probe socket") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func testSlowResponseTimesOutWithoutWedgingTheConnection() async throws {
        let mock = try startMock()
        var noRetry = Self.fastRetries
        noRetry.retryTimeouts = false
        let client = try makeClient(connections: 1, streams: 10, requestTimeout: 0.5, retry: noRetry)
        // Warm the connection first: a cold one carries a single stream until APNs has accepted a token.
        let warmUp = await send(client, alert(token(70)))
        XCTAssertEqual(warmUp.response?.status, 200)
        let slow = token(6, prefix: "51")
        try mock.setBehaviour(token: slow, .init(delayMs: 3000))
        let (request, credentials, environment) = (alert(slow), credentials, environment)
        async let slowResult = client.send(request, credentials: credentials, environment: environment)
        // The same connection keeps answering other requests meanwhile.
        try await Task.sleep(nanoseconds: 100_000_000)
        let fast = await send(client, alert(token(7)))
        XCTAssertEqual(fast.response?.status, 200)
        let result = await slowResult
        guard case .failure(.transport(let error, let attempts)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .timeout)
        XCTAssertEqual(attempts, 1)
        XCTAssertEqual(client.stats().requestsInFlight, 0)
    }

    func testTimedOutRequestIsRetriedWhenPolicyAllows() async throws {
        let mock = try startMock()
        let client = try makeClient(connections: 1, streams: 10, requestTimeout: 0.5)
        let slow = token(8, prefix: "52")
        try mock.setBehaviour(token: slow, .init(times: 1, delayMs: 2000))
        let response = try await responseOf(client, alert(slow))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.attempts, 2)
    }

    private func responseOf(_ client: APNsClient, _ request: APNsRequest) async throws -> APNsResponse {
        let result = await send(client, request)
        return try XCTUnwrap(result.response, "\(result)")
    }
}
