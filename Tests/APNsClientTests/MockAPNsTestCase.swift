import APNsClient
import Foundation
import JWTSigner
import Locking
import TestSupport
import XCTest

/// Base for tests against the strict mock APNs over real TLS + HTTP/2: one key, one team, one topic.
class MockAPNsTestCase: XCTestCase {
    let teamID = "TEAM123456"
    let keyID = "KEY1234567"
    let topic = "com.example.app"
    var pair: TestKeyPair!
    var key: ES256PrivateKey!
    var mock: MockAPNs!
    var clients: [APNsClient] = []

    override func setUpWithError() throws {
        pair = try TestKeys.makeP256()
        key = try ES256PrivateKey(pem: pair.privateKeyPEM)
    }

    override func tearDown() async throws {
        for client in clients { _ = await client.shutdown(gracePeriod: .seconds(0)) }
        clients = []
        mock?.stop()
        if let pair { TestKeys.remove(pair) }
    }

    func startMock(maxStreams: Int = 1000, delayMs: Int = 0, extraKeys: [(keyID: String, publicKeyPath: String)] = [])
        throws -> MockAPNs
    {
        let mock = try MockAPNs.start(
            teamID: teamID, keys: [(keyID: keyID, publicKeyPath: pair.publicKeyPath)] + extraKeys, topics: [topic],
            maxStreams: maxStreams, delayMs: delayMs)
        self.mock = mock
        return mock
    }

    /// Retries quickly so tests never wait on real backoff delays.
    static let fastRetries = APNsRetryPolicy(
        maxAttempts: 4, baseDelay: 0.01, maxDelay: 0.05, maxTotalDelay: 10, tooManyRequestsDelay: 0.01,
        tokenUpdateRejectedDelay: 0.01)

    func makeClient(
        connections: Int = 2, streams: Int = 50, requestTimeout: Double = 10, retry: APNsRetryPolicy = fastRetries,
        tokenStore: (any ProviderTokenStore)? = nil, clock: (@Sendable () -> Date)? = nil,
        tokenManagers: ProviderTokenManagers? = nil
    ) throws -> APNsClient {
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: connections, streamsPerConnection: streams, requestTimeout: requestTimeout,
                connectTimeout: 5, retryPolicy: retry, tokenStore: tokenStore, clock: clock ?? { Date() },
                tokenManagers: tokenManagers))
        clients.append(client)
        return client
    }

    var credentials: APNsCredentials { APNsCredentials(teamID: teamID, keyID: keyID, key: key) }
    var environment: APNsEnvironment { .custom(url: mock.baseURL, caFile: mock.caFile) }

    /// A 64-hex token made from `index` (distinct per index, with a readable prefix for behaviours).
    func token(_ index: Int, prefix: String = "aa") -> String {
        let hex = String(index, radix: 16)
        return prefix + String(repeating: "0", count: 62 - hex.count) + hex
    }

    func alert(_ token: String, apnsID: String? = nil) -> APNsRequest {
        APNsRequest(
            deviceToken: token, payload: Array(#"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#.utf8),
            topic: topic, pushType: .alert, apnsID: apnsID)
    }

    func send(_ client: APNsClient, _ request: APNsRequest) async -> APNsResult {
        await client.send(request, credentials: credentials, environment: environment)
    }

    /// Submits every request through the backpressure API and waits for all results (index-aligned).
    func submitAll(_ client: APNsClient, _ requests: [APNsRequest], credentials: APNsCredentials? = nil)
        async -> [APNsResult]
    {
        await submitEach(client, requests, credentials: credentials).all()
    }

    /// Submits every request through the backpressure API without waiting for the answers.
    /// - Returns: the collector their results arrive in (index-aligned).
    func submitEach(_ client: APNsClient, _ requests: [APNsRequest], credentials: APNsCredentials? = nil)
        async -> ResultCollector
    {
        let collector = ResultCollector(count: requests.count)
        for (index, request) in requests.enumerated() {
            await client.submit(request, credentials: credentials ?? self.credentials, environment: environment) {
                collector.record(index, $0)
            }
        }
        return collector
    }
}

/// Collects callback results by index and counts duplicate deliveries (each must fire exactly once).
final class ResultCollector: Sendable {
    private struct State {
        var results: [APNsResult?]
        var delivered = 0
        var duplicates = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Locked<State>

    init(count: Int) { state = Locked(State(results: Array(repeating: nil, count: count))) }

    func record(_ index: Int, _ result: APNsResult) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.results[index] != nil { state.duplicates += 1 }
            state.results[index] = result
            state.delivered += 1
            if state.delivered >= state.results.count, let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            return nil
        }
        waiter?.resume()
    }

    var duplicates: Int { state.withLock { $0.duplicates } }
    /// Results recorded so far.
    var delivered: Int { state.withLock { $0.delivered } }

    func all() async -> [APNsResult] {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.delivered >= state.results.count { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { $0.results.map { $0! } }
    }
}
