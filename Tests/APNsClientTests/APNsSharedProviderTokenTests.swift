import APNsClient
import Foundation
import TestSupport
import XCTest

/// A sandbox pool, a production pool and the broadcast client of one key, sharing one `ProviderTokenManagers` and
/// no store, against the strict mock over real TLS + HTTP/2 with Apple's refresh floor enforced per key: a second
/// token signed by any of them would be answered `429 TooManyProviderTokenUpdates`.
final class APNsSharedProviderTokenTests: MockAPNsTestCase {
    private var broadcastClient: APNsBroadcastClient?

    override func tearDown() async throws {
        await broadcastClient?.shutdown()
        try await super.tearDown()
    }

    private func startKeyFloorMock() throws -> MockAPNs {
        let mock = try startMock()
        _ = try mock.setConfig(.init(tokenFloorScope: .key))
        return mock
    }

    /// Production is the same mock under another name (`localhost`, in its certificate), so it gets a pool of its
    /// own, as `api.push.apple.com` and `api.sandbox.push.apple.com` do.
    private var production: APNsEnvironment {
        .custom(url: mock.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost"), caFile: mock.caFile)
    }

    private func makeBroadcastClient(_ managers: ProviderTokenManagers) throws -> APNsBroadcastClient {
        var configuration = APNsBroadcastClient.Configuration()
        configuration.tokenManagers = managers
        let client = try APNsBroadcastClient(configuration: configuration)
        broadcastClient = client
        return client
    }

    private func listChannels(_ client: APNsBroadcastClient) async -> Int? {
        let endpoints = APNsBroadcastEndpoints(managementURL: mock.baseURL, sendURL: mock.baseURL, caFile: mock.caFile)
        guard
            case .response(let response) = await client.manage(
                .list, bundleID: APNsBundleID(topic)!, endpoints: endpoints, credentials: credentials)
        else { return nil }
        return response.status
    }

    /// A policy that turns a rejected second token into a failure within a second instead of 25 minutes.
    private static let shortTokenWindow: APNsRetryPolicy = {
        var policy = fastRetries
        policy.tokenUpdateRejectedWindow = 1
        return policy
    }()

    func testSandboxAndProductionPoolsAndBroadcastsSignOneTokenBetweenThem() async throws {
        let mock = try startKeyFloorMock()
        let managers = ProviderTokenManagers()
        let client = try makeClient(retry: Self.shortTokenWindow, tokenManagers: managers)
        let broadcaster = try makeBroadcastClient(managers)

        let sandbox = await client.send(
            alert(token(1, prefix: "c1")), credentials: credentials, environment: environment)
        let live = await client.send(alert(token(2, prefix: "c1")), credentials: credentials, environment: production)
        let listed = await listChannels(broadcaster)
        XCTAssertEqual(sandbox.response?.status, 200, "\(sandbox)")
        XCTAssertEqual(live.response?.status, 200, "\(live)")
        XCTAssertEqual(listed, 200)

        XCTAssertEqual(client.stats().pools, 2)
        XCTAssertEqual(try XCTUnwrap(managers.manager(for: credentials)).mintCount, 1)
        XCTAssertEqual(client.stats().tokenRefreshes, 1, "the two pools' shared manager counted once")
        XCTAssertEqual(managers.count, 1)
        XCTAssertEqual(try mock.stats().byReason["TooManyProviderTokenUpdates"], nil)
        XCTAssertEqual(try mock.stats(includeTokens: false).connections.count, 3, "two pools and the broadcast client")
    }

    func testATokenRefreshedAfterExpiredProviderTokenIsUsedByTheOtherPoolAndTheBroadcasts() async throws {
        let mock = try startKeyFloorMock()
        // The clients' clock runs 30 minutes behind real time, so the first token is valid but 30 minutes old.
        let clock = TestClock(Date().addingTimeInterval(-30 * 60))
        let managers = ProviderTokenManagers(clock: clock.closure)
        let client = try makeClient(retry: Self.shortTokenWindow, tokenManagers: managers)
        let broadcaster = try makeBroadcastClient(managers)
        let first = await client.send(alert(token(1, prefix: "c2")), credentials: credentials, environment: environment)
        XCTAssertEqual(first.response?.status, 200, "\(first)")
        let firstListed = await listChannels(broadcaster)
        XCTAssertEqual(firstListed, 200)
        let oldIssuedAt = try XCTUnwrap(try mock.requests(token: token(1, prefix: "c2")).first?.jwt?.iat)

        // 25 minutes on, for the clients and the mock's per-key floor alike: one new token is allowed.
        clock.advance(minutes: 25)
        _ = try mock.setConfig(.init(clockOffsetSeconds: 25 * 60))
        let expiring = token(2, prefix: "70")
        try mock.setBehaviour(token: expiring, .init(status: 403, reason: "ExpiredProviderToken", times: 1))
        let refreshed = await client.send(alert(expiring), credentials: credentials, environment: production)
        XCTAssertEqual(refreshed.response?.status, 200, "\(refreshed)")
        let seen = try mock.requests(token: expiring)
        XCTAssertEqual(seen.map(\.status), [403, 200])
        let newIssuedAt = try XCTUnwrap(seen.last?.jwt?.iat)
        XCTAssertGreaterThan(newIssuedAt, oldIssuedAt, "the production pool's retry carried a new token")

        // The sandbox pool and the broadcast client use that token: a third would be refused by the key floor.
        let after = await client.send(alert(token(3, prefix: "c2")), credentials: credentials, environment: environment)
        XCTAssertEqual(after.response?.status, 200, "\(after)")
        XCTAssertEqual(try mock.requests(token: token(3, prefix: "c2")).map { $0.jwt?.iat }, [newIssuedAt])
        let listedAfter = await listChannels(broadcaster)
        XCTAssertEqual(listedAfter, 200)
        XCTAssertEqual(try XCTUnwrap(managers.manager(for: credentials)).mintCount, 2)
        XCTAssertEqual(client.stats().tokenRefreshes, 2)
        XCTAssertEqual(try mock.stats().byReason["TooManyProviderTokenUpdates"], nil)
    }
}
