import Foundation
@testable import PushClient
import XCTest

/// The Beams SDK's retry rules as a pure function, and the local checks made before any request.
final class RetryPolicyTests: XCTestCase {
    func testDecidesLikeTheBeamsSDK() {
        XCTAssertEqual(RetryPolicy.decide(status: nil, description: "connection refused"), .retry)
        XCTAssertEqual(RetryPolicy.decide(status: 200, description: nil), .success)
        XCTAssertEqual(RetryPolicy.decide(status: 204, description: nil), .success)
        XCTAssertEqual(RetryPolicy.decide(status: 400, description: "Missing APNs token"), .fail(.badRequest("Missing APNs token")))
        XCTAssertEqual(RetryPolicy.decide(status: 401, description: "Incorrect APNs token supplied: the device token must be hexadecimal"),
                       .fail(.badDeviceToken("Incorrect APNs token supplied: the device token must be hexadecimal")))
        XCTAssertEqual(RetryPolicy.decide(status: 401, description: "Invalid JWT claims: Token used before issued"),
                       .fail(.unauthorized("Invalid JWT claims: Token used before issued")))
        XCTAssertEqual(RetryPolicy.decide(status: 403, description: nil), .fail(.unauthorized("Unknown API error")))
        XCTAssertEqual(RetryPolicy.decide(status: 404, description: "Could not find the device"), .deviceNotFound)
        XCTAssertEqual(RetryPolicy.decide(status: 500, description: "Device could not be created"), .fail(.couldNotCreateDevice))
        for status in [408, 413, 422, 429, 500, 502, 503] {
            XCTAssertEqual(RetryPolicy.decide(status: status, description: "x"), .retry, "\(status)")
        }
    }

    func testBacksOffExponentiallyFrom400MillisecondsUpTo64Seconds() {
        let delays = (1...12).map { RetryPolicy.sdk.delay(beforeRetry: $0) }
        XCTAssertEqual(delays, [0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 64, 64, 64, 64])
        XCTAssertEqual(RetryPolicy.sdk.delay(beforeRetry: Int.max), 64, "no overflow for absurd attempt numbers")
        XCTAssertNil(RetryPolicy.sdk.maxAttempts, "the SDK retries forever")
    }

    func testRejectsBadInterestsAndTokensBeforeAnyRequest() async throws {
        let transport = CountingTransport()
        let client = try PushClient(instanceID: "i", baseURL: URL(string: "http://127.0.0.1:9")!, bundleIdentifier: "b",
                                    store: InMemoryDeviceStateStore(), transport: transport)
        for bad in ["", "has space", "slash/", String(repeating: "a", count: 165), "ümlaut"] {
            await assertThrows(PushClientError.invalidInterest(bad)) { try await client.addInterest(bad) }
        }
        try await client.addInterest("a-Z_0=9@,.;")
        await assertThrows(PushClientError.invalidDeviceToken("xyz")) { try await client.start(deviceTokenHex: "xyz", environment: .sandbox) }
        await assertThrows(PushClientError.invalidDeviceToken("abc")) { try await client.start(deviceTokenHex: "abc", environment: .sandbox) }
        await assertThrows(PushClientError.notStarted) { try await client.setUserID("u") { _ in "t" } }
        await assertThrows(PushClientError.invalidUserID("")) { try await client.setUserID("") { _ in "t" } }
        XCTAssertEqual(transport.count, 0)
        let interests = await client.interests
        XCTAssertEqual(interests, ["a-Z_0=9@,.;"], "kept locally until start")
    }

    func testStateRoundTripsThroughAFileAndAnUnreadableFileMeansAFreshStart() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("push-client-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        let store = FileDeviceStateStore(url: url)
        XCTAssertNil(store.load())
        let state = DeviceState(deviceID: "apns-1", deviceToken: "ab", environment: .sandbox, interests: ["a"], userID: "u")
        try store.save(state)
        XCTAssertEqual(FileDeviceStateStore(url: url).load(), state)
        try Data("{not json".utf8).write(to: url)
        XCTAssertNil(store.load())
    }

    func testUserDefaultsStoreKeepsOneStatePerInstance() throws {
        let defaults = try XCTUnwrap(UserDefaults(suiteName: "push-client-tests-\(UUID().uuidString)"))
        let a = UserDefaultsDeviceStateStore(defaults: defaults, instanceID: "a")
        let b = UserDefaultsDeviceStateStore(defaults: defaults, instanceID: "b")
        try a.save(DeviceState(deviceID: "apns-a"))
        XCTAssertEqual(a.load()?.deviceID, "apns-a")
        XCTAssertNil(b.load())
    }
}

/// Counts requests and answers like a server that is down (tests of local checks expect zero).
final class CountingTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked: `requests` is a Locked.
    private let requests = Locked<[String]>([])
    let inner: (any HTTPTransport)?

    init(inner: (any HTTPTransport)? = nil) { self.inner = inner }

    var count: Int { requests.get().count }
    var log: [String] { requests.get() }

    func send(method: String, url: URL, headers: [String: String], body: Data?) async throws -> (status: Int, body: Data) {
        requests.update { $0.append("\(method) \(url.path)") }
        guard let inner else { throw URLError(.cannotConnectToHost) }
        return try await inner.send(method: method, url: url, headers: headers, body: body)
    }
}

func assertThrows<E: Error & Equatable>(_ expected: E, file: StaticString = #filePath, line: UInt = #line,
                                        _ body: () async throws -> Void) async {
    do {
        try await body()
        XCTFail("no error; expected \(expected)", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(error, expected, file: file, line: line)
    } catch {
        XCTFail("\(error); expected \(expected)", file: file, line: line)
    }
}
