import Foundation
@testable import PushClient
import XCTest

/// The Live Activity calls against the real push-server binary: tokens stored and listed by the server, an ended
/// activity removed, the server's per-device bound surfacing as `refused` without retries, and local checks.
final class LiveActivityClientTests: ServerTestCase {
    private func startedClient() async throws -> PushClient {
        let client = try PushClient(
            instanceID: ServerProcess.instanceID, baseURL: server.baseURL, bundleIdentifier: "com.example.client",
            store: InMemoryDeviceStateStore(), retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05),
            sleep: { _ in })
        try await client.start(deviceTokenHex: String(repeating: "ab", count: 32), environment: .sandbox)
        return client
    }

    private func listing(_ client: PushClient) async throws -> [String: Any] {
        let current = await client.deviceID
        let deviceID = try XCTUnwrap(current)
        let (status, body) = try await server.deviceResource(deviceID, "live-activity")
        XCTAssertEqual(status, 200)
        return try XCTUnwrap(body as? [String: Any])
    }

    private func token(_ byte: UInt8) -> Data { Data(repeating: byte, count: 32) }

    func testStoresStartAndActivityTokensAndEndsAnActivity() async throws {
        let client = try await startedClient()
        try await client.setLiveActivityStartToken(token(0x11), attributesType: "MatchAttributes")
        try await client.setLiveActivityToken(token(0x22), activityID: "A-1", attributesType: "MatchAttributes",
                                              reference: "match-7", expiresAt: Date().addingTimeInterval(3600))
        try await client.setLiveActivityToken(token(0x33), activityID: "A-2", attributesType: "MatchAttributes")
        var list = try await listing(client)
        let starts = try XCTUnwrap(list["startTokens"] as? [[String: Any]])
        XCTAssertEqual(starts.map { $0["attributesType"] as? String }, ["MatchAttributes"])
        XCTAssertEqual(starts.first?["token"] as? String, "1111…1111 (64)", "the server masks tokens")
        var activities = try XCTUnwrap(list["activities"] as? [[String: Any]])
        XCTAssertEqual(activities.map { $0["activityId"] as? String }, ["A-1", "A-2"])
        XCTAssertEqual(activities.first?["reference"] as? String, "match-7")

        try await client.endLiveActivity(activityID: "A-1")
        try await client.removeLiveActivityStartToken(attributesType: "MatchAttributes")
        list = try await listing(client)
        activities = try XCTUnwrap(list["activities"] as? [[String: Any]])
        XCTAssertEqual(activities.map { $0["activityId"] as? String }, ["A-2"])
        XCTAssertEqual((list["startTokens"] as? [Any])?.count, 0)
    }

    func testTheServersBoundIsRefusedWithoutRetrying() async throws {
        let client = try await startedClient()
        for index in 0..<16 {  // limits.maxLiveActivitiesPerDevice, default 16
            try await client.setLiveActivityToken(token(UInt8(index)), activityID: "A\(index)", attributesType: "Match")
        }
        do {
            try await client.setLiveActivityToken(token(0xEE), activityID: "A16", attributesType: "Match")
            XCTFail("the 17th activity was accepted")
        } catch PushClientError.refused(let description) {
            XCTAssertTrue(description.contains("limits.maxLiveActivitiesPerDevice"), description)
        }
    }

    func testInvalidNamesAndTokensAreRefusedBeforeAnyRequest() async throws {
        let client = try await startedClient()
        for name in ["", "9Match", "Match-Attributes", String(repeating: "A", count: 129)] {
            do {
                try await client.setLiveActivityStartToken(token(1), attributesType: name)
                XCTFail("accepted \(name)")
            } catch PushClientError.invalidLiveActivity {}
        }
        do {
            try await client.endLiveActivity(activityID: "has space")
            XCTFail("accepted an activity id with a space")
        } catch PushClientError.invalidLiveActivity {}
        do {
            try await client.setLiveActivityStartToken(Data([1, 2]), attributesType: "Match")
            XCTFail("accepted a 2-byte token")
        } catch PushClientError.invalidLiveActivity {}
    }
}
