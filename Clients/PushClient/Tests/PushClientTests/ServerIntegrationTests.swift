import Foundation
@testable import PushClient
import XCTest

/// The client against the real push-server binary over real sockets: registration with the environment, state kept
/// between launches, interests, the user binding through a token provider, the 404 → register-again rule, retries
/// until the server answers, errors that must not be retried, stop, and delivery/open reports.
final class ServerIntegrationTests: ServerTestCase {
    private func client(store: any DeviceStateStore = InMemoryDeviceStateStore(), transport: (any HTTPTransport)? = nil,
                        retry: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05),
                        baseURL: URL? = nil, instanceID: String = ServerProcess.instanceID,
                        sleep: (@Sendable (TimeInterval) async throws -> Void)? = nil) throws -> PushClient {
        try PushClient(instanceID: instanceID, baseURL: baseURL ?? server.baseURL, bundleIdentifier: "com.example.client",
                       store: store, transport: transport ?? URLSessionTransport(), retryPolicy: retry,
                       sleep: sleep ?? { _ in })
    }

    private func token() -> String { (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased() }

    private func serverInterests(_ deviceID: String) async throws -> [String] {
        let (status, body) = try await server.deviceResource(deviceID, "interests")
        XCTAssertEqual(status, 200)
        return ((body as? [String: Any])?["interests"] as? [String]) ?? []
    }

    func testRegistersWithItsEnvironmentAndKeepsItsStateAcrossLaunches() async throws {
        let store = InMemoryDeviceStateStore()
        let apnsToken = token()
        let first = try client(store: store)
        let bytes = Data(stride(from: 0, to: apnsToken.count, by: 2).map {
            UInt8(apnsToken[apnsToken.index(apnsToken.startIndex, offsetBy: $0)...].prefix(2), radix: 16)!
        })
        let deviceID = try await first.start(deviceToken: bytes, environment: .sandbox)
        XCTAssertTrue(deviceID.hasPrefix("apns-"))
        let card = try await XCTUnwrapAsync(try await server.device(token: apnsToken))
        XCTAssertEqual(card["id"] as? String, deviceID)
        XCTAssertEqual(card["environment"] as? String, "sandbox")
        XCTAssertEqual(card["environmentDeclared"] as? Bool, true, "the client always declares the environment")
        XCTAssertEqual(card["bundleIdentifier"] as? String, "com.example.client")
        XCTAssertEqual((card["metadata"] as? [String: Any])?["sdkVersion"] as? String, "push-server-client \(PushClient.version)")
        try await first.addInterest("launch")

        // Next launch: the saved state is there before any request, and registering again keeps the same device.
        let second = try client(store: store)
        let saved = await second.deviceID
        XCTAssertEqual(saved, deviceID)
        let again = try await second.start(deviceTokenHex: "<\(apnsToken.uppercased())>", environment: .sandbox)
        XCTAssertEqual(again, deviceID)
        let interests = try await serverInterests(deviceID)
        XCTAssertEqual(interests, ["launch"])
    }

    func testInterestsSetAddRemoveAndClearMatchTheServer() async throws {
        let push = try client()
        try await push.setInterests(["before-start"])  // kept locally, sent by start
        let deviceID = try await push.start(deviceTokenHex: token(), environment: .production)
        var server = try await serverInterests(deviceID)
        XCTAssertEqual(server, ["before-start"])
        try await push.setInterests(["a", "b"])
        try await push.addInterest("c")
        try await push.removeInterest("a")
        server = try await serverInterests(deviceID)
        XCTAssertEqual(server, ["b", "c"])
        let local = await push.interests
        XCTAssertEqual(local, ["b", "c"])
        try await push.clearInterests()
        server = try await serverInterests(deviceID)
        XCTAssertEqual(server, [])
    }

    func testAnUnchangedInterestCostsNoRequest() async throws {
        let transport = CountingTransport(inner: URLSessionTransport())
        let push = try client(transport: transport)
        try await push.start(deviceTokenHex: token(), environment: .sandbox)
        try await push.addInterest("x")
        let before = transport.count
        try await push.addInterest("x")
        try await push.removeInterest("never-followed")
        try await push.setInterests(["x"])
        XCTAssertEqual(transport.count, before)
    }

    func testBindsAUserWithTheTokenProviderAndRefusesASecondUser() async throws {
        let push = try client()
        let apnsToken = token()
        try await push.start(deviceTokenHex: apnsToken, environment: .sandbox)
        let server = self.server!
        let asked = Locked<[String]>([])
        try await push.setUserID("alice") { user in
            asked.update { $0.append(user) }
            return try server.userToken(user)
        }
        XCTAssertEqual(asked.get(), ["alice"])
        let card = try await server.device(token: apnsToken)
        XCTAssertEqual(card?["userId"] as? String, "alice")
        try await push.setUserID("alice") { _ in XCTFail("no new token for the same user"); return "" }
        await assertThrows(PushClientError.userAlreadySet(current: "alice")) {
            try await push.setUserID("bob") { try server.userToken($0) }
        }
        // A token the server refuses is not retried: the SDK treats 401 as final.
        let other = try client()
        try await other.start(deviceTokenHex: token(), environment: .sandbox)
        do {
            try await other.setUserID("carol") { _ in "not.a.jwt" }
            XCTFail("a bad token was accepted")
        } catch PushClientError.unauthorized(let description) {
            XCTAssertFalse(description.isEmpty)
        }
        let unbound = await other.userID
        XCTAssertNil(unbound)
    }

    func testA404RegistersAgainAndReplaysInterestsAndUser() async throws {
        let store = InMemoryDeviceStateStore()
        let push = try client(store: store)
        let apnsToken = token()
        let firstID = try await push.start(deviceTokenHex: apnsToken, environment: .sandbox)
        try await push.setInterests(["kept"])
        let server = self.server!
        try await push.setUserID("dora") { try server.userToken($0) }

        // The server forgets the device (an operator deleted it, or the database was restored from a backup).
        let (status, _) = try await server.call(
            "DELETE", "/device_api/v1/instances/\(ServerProcess.instanceID)/devices/apns/\(firstID)", secret: false)
        XCTAssertEqual(status, 200)
        let forgotten = try await server.device(token: apnsToken)
        XCTAssertNil(forgotten)

        try await push.addInterest("new")
        let newID = try await XCTUnwrapAsync(await push.deviceID)
        XCTAssertNotEqual(newID, firstID)
        let card = try await XCTUnwrapAsync(try await server.device(token: apnsToken))
        XCTAssertEqual(card["id"] as? String, newID)
        XCTAssertEqual(Set(card["interests"] as? [String] ?? []), ["kept", "new"])
        XCTAssertEqual(card["userId"] as? String, "dora")
        XCTAssertEqual(store.load()?.deviceID, newID, "the new id is saved")
    }

    func testRetriesWithTheSDKsBackOffUntilTheServerAnswers() async throws {
        let port = server.port
        server.stop()
        let delays = Locked<[TimeInterval]>([])
        let restarted = Locked(false)
        let restart = ServerProcessBox(try ServerProcess(port: port))
        let push = try client(retry: .sdk, baseURL: URL(string: "http://127.0.0.1:\(port)")!, sleep: { seconds in
            delays.update { $0.append(seconds) }
            // After three refused connections the server comes back on the same port.
            if delays.get().count == 3, restarted.set(true) == false { try await restart.startOffThePool() }
        })
        let deviceID = try await push.start(deviceTokenHex: token(), environment: .sandbox)
        XCTAssertTrue(deviceID.hasPrefix("apns-"))
        XCTAssertEqual(delays.get(), [0.4, 0.8, 1.6], "0.2 s doubling, as the Beams SDK waits")
        restart.value.stop()
    }

    func testGivesUpAfterMaxAttemptsAndNeverRetriesFinalAnswers() async throws {
        let down = try client(retry: RetryPolicy(maxAttempts: 2, baseDelay: 0, maxDelay: 0),
                              baseURL: URL(string: "http://127.0.0.1:1")!)
        do {
            try await down.start(deviceTokenHex: token(), environment: .sandbox)
            XCTFail("no server answered")
        } catch PushClientError.gaveUp(let attempts, _) {
            XCTAssertEqual(attempts, 2)
        }

        let transport = CountingTransport(inner: URLSessionTransport())
        let push = try client(transport: transport, retry: .sdk)
        // 401 naming the device token: final, one request (the SDK's badDeviceToken).
        await assertThrowsKind(of: "badDeviceToken") { try await push.start(deviceTokenHex: "ab", environment: .sandbox) }
        XCTAssertEqual(transport.count, 1)
        // An unknown instance: final too.
        let lost = try client(transport: transport, retry: .sdk, instanceID: UUID().uuidString.lowercased())
        await assertThrowsKind(of: "instanceNotFound") { try await lost.start(deviceTokenHex: self.token(), environment: .sandbox) }
        XCTAssertEqual(transport.count, 2)
    }

    func testStopDeletesTheDeviceAndForgetsEverything() async throws {
        let store = InMemoryDeviceStateStore()
        let push = try client(store: store)
        let apnsToken = token()
        try await push.start(deviceTokenHex: apnsToken, environment: .sandbox)
        try await push.addInterest("gone")
        try await push.stop()
        let forgotten = try await server.device(token: apnsToken)
        XCTAssertNil(forgotten)
        XCTAssertEqual(store.load(), DeviceState())
        let interests = await push.interests
        XCTAssertEqual(interests, [])
        await assertThrows(PushClientError.notStarted) { try await push.report(.open, publishID: "pubid-x") }
    }

    func testPublishesReachTheDeviceAndItsReportsAreCounted() async throws {
        let push = try client()
        try await push.start(deviceTokenHex: token(), environment: .sandbox)
        let interest = "client-\(UUID().uuidString.prefix(8))"
        try await push.addInterest(interest)
        let status = try await server.publishAndWait(interests: [interest])
        XCTAssertEqual(status["targets"] as? Int, 1, "the publish found this device")
        let publishID = try XCTUnwrap(status["publishId"] as? String)
        try await push.report(.delivery, publishID: publishID)
        try await push.report(.open, publishID: publishID)
        let (_, document) = try await server.call("GET", "/publish_api/v1/instances/\(ServerProcess.instanceID)/publishes/\(publishID)")
        let reports = (document as? [String: Any])?["reports"] as? [String: Any]
        XCTAssertEqual(reports?["delivered"] as? Int, 1)
        XCTAssertEqual(reports?["opened"] as? Int, 1)
    }

    func testConcurrentCallsNeverInterleaveSoServerAndClientAgree() async throws {
        let push = try client()
        let deviceID = try await push.start(deviceTokenHex: token(), environment: .sandbox)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<10 {
                group.addTask { try? await push.addInterest("step-\(index)") }
                group.addTask { try? await push.removeInterest("step-\(index - 1)") }
            }
        }
        let local = await push.interests
        let remote = try await serverInterests(deviceID)
        XCTAssertEqual(remote, local, "the server ends with the client's last state")
    }
}

/// Lets a `@Sendable` closure start a server made outside it.
final class ServerProcessBox: @unchecked Sendable {
    // @unchecked: the box is written once, at init.
    let value: ServerProcess
    init(_ value: ServerProcess) { self.value = value }

    /// `start()` blocks until the server listens: run it on a Dispatch thread, not the Swift concurrency pool.
    func startOffThePool() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            DispatchQueue.global().async {
                do {
                    try self.value.start()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

func XCTUnwrapAsync<T>(_ value: @autoclosure () async throws -> T?, file: StaticString = #filePath,
                       line: UInt = #line) async throws -> T {
    let resolved = try await value()
    return try XCTUnwrap(resolved, file: file, line: line)
}

func assertThrowsKind(of name: String, file: StaticString = #filePath, line: UInt = #line,
                      _ body: () async throws -> Void) async {
    do {
        try await body()
        XCTFail("no error; expected \(name)", file: file, line: line)
    } catch {
        XCTAssertTrue("\(error)".hasPrefix(name), "\(error); expected \(name)", file: file, line: line)
    }
}
