import APNsClient
import Foundation
import JSON
import TestSupport
import XCTest

/// `APNsBroadcastClient` against the strict mock APNs over real TLS + HTTP/2.
final class APNsBroadcastClientTests: MockAPNsTestCase {
    var broadcastClient: APNsBroadcastClient!

    override func tearDown() async throws {
        await broadcastClient?.shutdown()
        try await super.tearDown()
    }

    private func setUpClient() throws -> (APNsBroadcastClient, APNsBroadcastEndpoints, APNsBundleID) {
        let mock = try startMock()
        let client = try APNsBroadcastClient()
        broadcastClient = client
        return (
            client, APNsBroadcastEndpoints(managementURL: mock.baseURL, sendURL: mock.baseURL, caFile: mock.caFile),
            APNsBundleID(topic)!
        )
    }

    private func response(_ result: APNsBroadcastResult, file: StaticString = #filePath, line: UInt = #line)
        -> APNsBroadcastResponse?
    {
        guard case .response(let response) = result else {
            XCTFail("expected a response, got \(result)", file: file, line: line)
            return nil
        }
        return response
    }

    func testCreatesListsReadsBroadcastsAndDeletesAChannel() async throws {
        let (client, endpoints, app) = try setUpClient()
        let created = response(
            await client.manage(
                .create(.noMessageStored), bundleID: app, endpoints: endpoints,
                credentials: credentials))
        XCTAssertEqual(created?.status, 201)
        let id = try XCTUnwrap(created?.createdChannel)
        XCTAssertTrue(id.rawValue.contains("/") && id.rawValue.contains("+"), "the mock's ids carry / and +")

        let listed = response(await client.manage(.list, bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(listed?.channels, [id])
        let read = response(
            await client.manage(.read(id), bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(read?.body?.objectValue?["message-storage-policy"], .int(0))

        let payload = Array(#"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"s":1}}}"#.utf8)
        let sent = response(
            await client.broadcast(
                APNsBroadcastRequest(channelID: id, payload: payload), bundleID: app,
                endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(sent?.status, 200)
        XCTAssertNotNil(sent?.requestID)
        let recorded = try XCTUnwrap(try mock.control("GET", "/broadcasts").arrayValue)
        XCTAssertEqual(recorded.count, 1)
        XCTAssertEqual(recorded.first?.objectValue?["channel"], .string(id.rawValue))
        let headers = recorded.first?.objectValue?["headers"]?.objectValue
        XCTAssertEqual(headers?["apns-priority"], .string("5"))
        XCTAssertEqual(headers?["apns-expiration"], .string("0"))
        XCTAssertNil(headers?["apns-topic"])

        let deleted = response(
            await client.manage(.delete(id), bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(deleted?.status, 204)
        let again = response(
            await client.manage(.delete(id), bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(again?.reason, .channelNotRegistered)
    }

    func testNonzeroExpirationOnANoStorageChannelIsBadExpirationDate() async throws {
        let (client, endpoints, app) = try setUpClient()
        let created = response(
            await client.manage(
                .create(.noMessageStored), bundleID: app, endpoints: endpoints,
                credentials: credentials))
        let id = try XCTUnwrap(created?.createdChannel)
        let request = APNsBroadcastRequest(
            channelID: id, payload: Array(#"{"aps":{"event":"end","timestamp":1}}"#.utf8),
            expiration: 1_900_000_000)
        let sent = response(
            await client.broadcast(request, bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(sent?.reason, .badExpirationDate)
    }

    func testFeatureNotEnabledIsAReasonNotAFailure() async throws {
        let (client, endpoints, app) = try setUpClient()
        _ = try mock.control("PUT", "/broadcast/config", body: .object(["enabled": .bool(false)]))
        let listed = response(await client.manage(.list, bundleID: app, endpoints: endpoints, credentials: credentials))
        XCTAssertEqual(listed?.status, 400)
        XCTAssertEqual(listed?.reason, .featureNotEnabled)
    }

    func testUnreachableHostIsARetryableTransportFailure() async throws {
        let client = try APNsBroadcastClient()
        broadcastClient = client
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let endpoints = APNsBroadcastEndpoints(managementURL: "https://127.0.0.1:1", sendURL: "https://127.0.0.1:1")
        let result = await client.manage(
            .list, bundleID: APNsBundleID(topic)!, endpoints: endpoints, credentials: credentials)
        guard case .failure(let failure) = result else { return XCTFail("expected a failure, got \(result)") }
        XCTAssertTrue(failure.isRetryable, "\(failure)")
    }

    func testAnotherProcessesNewerTokenIsA429ToRetryNotAConfigurationFault() async throws {
        let (client, endpoints, app) = try setUpClient()
        try mock.setConfig(MockAPNs.Config(tokenFloorScope: .key))
        // Another process signed a token for the key a moment ago (no shared store): ours is refused.
        let other = try APNsBroadcastClient()
        let first = await other.manage(.list, bundleID: app, endpoints: endpoints, credentials: credentials)
        await other.shutdown()
        XCTAssertEqual(response(first)?.status, 200)
        let result = await client.manage(.list, bundleID: app, endpoints: endpoints, credentials: credentials)
        let answer = response(result)
        XCTAssertEqual(answer?.status, 429)
        XCTAssertEqual(answer?.reason, .tooManyProviderTokenUpdates)
    }

    func testAfterShutdownCallsEndShutdown() async throws {
        let (client, endpoints, app) = try setUpClient()
        await client.shutdown()
        let result = await client.manage(.list, bundleID: app, endpoints: endpoints, credentials: credentials)
        XCTAssertEqual(result, .failure(.shutdown))
    }
}
