import Foundation
@testable import PushClient
import XCTest

/// The UnifiedPush and HMS calls against the real push-server binary: registration as the UnifiedPush connector and
/// HMS Core hand over their endpoint or token, the endpoint/token update keeping the device, interests, the user,
/// the 404 → register-again rule and stop on those platforms, and the checks made before any request.
final class AndroidDeviceTests: ServerTestCase {
    // A P-256 public key and auth secret (RFC 8291 Appendix A's user agent keys).
    private let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    private let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    private func client(store: any DeviceStateStore = InMemoryDeviceStateStore(),
                        transport: (any HTTPTransport)? = nil) throws -> PushClient {
        try PushClient(instanceID: ServerProcess.instanceID, baseURL: server.baseURL, bundleIdentifier: "com.example.client",
                       store: store, transport: transport ?? URLSessionTransport(),
                       retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05), sleep: { _ in })
    }

    private func subscription(_ path: String = UUID().uuidString) -> UnifiedPushSubscription {
        UnifiedPushSubscription(endpoint: "https://127.0.0.1:\(ServerProcess.unifiedPushPort)/up/\(path)?up=1",
                                p256dh: p256dh, auth: auth)
    }

    private func hmsToken() -> String { "IQAAAACy0\(UUID().uuidString.replacingOccurrences(of: "-", with: ""))AQ" }

    private func serverInterests(_ deviceID: String, _ platform: String) async throws -> [String] {
        let (status, body) = try await server.deviceResource(deviceID, "interests", platform: platform)
        XCTAssertEqual(status, 200)
        return ((body as? [String: Any])?["interests"] as? [String]) ?? []
    }

    func testUnifiedPushRegistersTheEndpointAndKeysAndKeepsTheDeviceWhenTheEndpointChanges() async throws {
        let push = try client()
        let vapid = try await push.vapidPublicKey()
        XCTAssertEqual(Data(base64Encoded: vapid.replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/") + "=")?.count, 65, "a P-256 point, as the distributor wants")
        try await push.setInterests(["up-news"])  // before start: sent by start
        let deviceID = try await push.start(unifiedPush: subscription())
        XCTAssertTrue(deviceID.hasPrefix("unifiedpush-"), deviceID)
        var interests = try await serverInterests(deviceID, "unifiedpush")
        XCTAssertEqual(interests, ["up-news"])
        let server = self.server!
        try await push.setUserID("erin") { try server.userToken($0) }
        try await push.addInterest("up-sport")

        // The distributor's NEW_ENDPOINT: the same device, interests and user, now at the new endpoint.
        let moved = subscription()
        try await push.updateUnifiedPush(moved)
        let after = await push.deviceID
        XCTAssertEqual(after, deviceID)
        let card = try await XCTUnwrapAsync(try await server.device(id: deviceID))
        XCTAssertEqual(card["userId"] as? String, "erin")
        interests = try await serverInterests(deviceID, "unifiedpush")
        XCTAssertEqual(interests, ["up-news", "up-sport"])
        // The server files the device under the new endpoint: registering it again names the same device.
        let (status, body) = try await server.call(
            "POST", "/device_api/v1/instances/\(ServerProcess.instanceID)/devices/unifiedpush",
            body: ["endpoint": moved.endpoint, "keys": ["p256dh": p256dh, "auth": auth]], secret: false)
        XCTAssertEqual(status, 200)
        XCTAssertEqual((body as? [String: Any])?["id"] as? String, deviceID)

        try await push.stop()
        let gone = try await server.device(id: deviceID)
        XCTAssertNil(gone)
    }

    func testHMSRegistersTheTokenKeepsTheDeviceOnANewTokenAndRegistersAgainAfterA404() async throws {
        let store = InMemoryDeviceStateStore()
        let push = try client(store: store)
        let first = hmsToken()
        let deviceID = try await push.start(hmsToken: first)
        XCTAssertTrue(deviceID.hasPrefix("hms-"), deviceID)
        let card = try await XCTUnwrapAsync(try await server.device(token: first, platform: "hms"))
        XCTAssertEqual(card["id"] as? String, deviceID)
        XCTAssertEqual((card["metadata"] as? [String: Any])?["sdkVersion"] as? String, "push-server-client \(PushClient.version)")
        try await push.addInterest("hms-news")
        let server = self.server!
        try await push.setUserID("fred") { try server.userToken($0) }

        // onNewToken: the device keeps its id; the old token no longer names it.
        let second = hmsToken()
        try await push.updateHMSToken(second)
        let renamed = try await server.device(token: second, platform: "hms")
        XCTAssertEqual(renamed?["id"] as? String, deviceID)
        let old = try await server.device(token: first, platform: "hms")
        XCTAssertNil(old)
        XCTAssertEqual(store.load()?.deviceToken, second)

        // The server forgets the device: the next call registers the current token again, with interests and user.
        let (status, _) = try await server.call(
            "DELETE", "/device_api/v1/instances/\(ServerProcess.instanceID)/devices/hms/\(deviceID)", secret: false)
        XCTAssertEqual(status, 200)
        try await push.addInterest("hms-sport")
        let newID = try await XCTUnwrapAsync(await push.deviceID)
        XCTAssertNotEqual(newID, deviceID)
        XCTAssertTrue(newID.hasPrefix("hms-"), newID)
        let again = try await XCTUnwrapAsync(try await server.device(token: second, platform: "hms"))
        XCTAssertEqual(again["id"] as? String, newID)
        XCTAssertEqual(Set(again["interests"] as? [String] ?? []), ["hms-news", "hms-sport"])
        XCTAssertEqual(again["userId"] as? String, "fred")
    }

    func testBadTokensAndEndpointsAreRefusedBeforeAnyRequestAndServerRefusalsAreNotRetried() async throws {
        let transport = CountingTransport(inner: URLSessionTransport())
        let push = try client(transport: transport)
        await assertThrowsKind(of: "invalidDeviceToken") { try await push.start(hmsToken: "has space") }
        await assertThrowsKind(of: "invalidDeviceToken") { try await push.start(hmsToken: "") }
        await assertThrowsKind(of: "invalidDeviceToken") {
            try await push.start(unifiedPush: UnifiedPushSubscription(endpoint: "http://ntfy.example/up", p256dh: self.p256dh,
                                                                        auth: self.auth))
        }
        await assertThrows(PushClientError.notStarted) { try await push.updateHMSToken(self.hmsToken()) }
        XCTAssertEqual(transport.count, 0)
        // A port the instance does not allow: the server's 400 is final.
        let closed = UnifiedPushSubscription(endpoint: "https://127.0.0.1:9/up/x", p256dh: p256dh, auth: auth)
        await assertThrowsKind(of: "badRequest") { try await push.start(unifiedPush: closed) }
        XCTAssertEqual(transport.count, 1)
        // Registered on HMS, a UnifiedPush update is not this device's.
        try await push.start(hmsToken: hmsToken())
        await assertThrows(PushClientError.notStarted) { try await push.updateUnifiedPush(self.subscription()) }
    }

    func testStateSavedBeforePlatformsExistedStillMeansAPNs() throws {
        let old = Data(#"{"deviceID":"apns-1","deviceToken":"abcd","environment":"sandbox","interests":["a"]}"#.utf8)
        let state = try JSONDecoder().decode(DeviceState.self, from: old)
        XCTAssertEqual(state.registration, .apns(token: "abcd", environment: .sandbox))
    }
}
