import APNsClient
import Foundation
import HTTPClient
import TestSupport
import XCTest

/// Connections, streams and provider tokens against the strict mock.
final class APNsClientConnectionTests: MockAPNsTestCase {
    func testGoawayWithoutAnswerReconnectsAndEveryNotificationIsAnsweredOnce() async throws {
        let mock = try startMock(delayMs: 20)
        let client = try makeClient(connections: 1, streams: 50)
        let victim = token(0, prefix: "60")
        try mock.setBehaviour(token: victim, .init(times: 1, action: .goawayUnanswered))
        // The victim sits mid-stream, so the GOAWAY also cuts off streams opened after it.
        var requests = (1..<200).map { alert(token($0)) }
        requests.insert(alert(victim), at: 100)
        let collector = await submitEach(client, requests)
        let results = await collector.all()
        XCTAssertEqual(collector.duplicates, 0)
        XCTAssertEqual(
            results.filter { $0.response?.status == 200 }.count, requests.count,
            "\(results.filter { $0.response?.status != 200 })")
        let stats = try mock.stats()
        XCTAssertEqual(stats.goawaysSent, 1)
        XCTAssertGreaterThanOrEqual(stats.connectionsOpened, 2)
        XCTAssertGreaterThanOrEqual(client.stats().connectionsOpened, 2)
        // The unanswered stream was sent again on the new connection: by curl itself (it retries streams a GOAWAY
        // marks unprocessed) or by the client's retry, whichever sees it first.
        XCTAssertEqual(try mock.requests(token: victim).count, 2)
    }

    func testGoawayAfterAnswerReconnectsForLaterRequests() async throws {
        let mock = try startMock()
        let client = try makeClient(connections: 1, streams: 10)
        let closer = token(0, prefix: "61")
        try mock.setBehaviour(token: closer, .init(times: 1, action: .goaway))
        let answered = await send(client, alert(closer))
        XCTAssertEqual(answered.response?.status, 200)
        let results = await submitAll(client, (1...20).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 20)
        XCTAssertEqual(try mock.stats().connectionsOpened, 2)
    }

    func testDroppedConnectionIsReopenedAndTheRequestResent() async throws {
        let mock = try startMock()
        let client = try makeClient(connections: 1, streams: 10)
        let victim = token(0, prefix: "62")
        try mock.setBehaviour(token: victim, .init(times: 1, action: .drop))
        let result = await send(client, alert(victim))
        XCTAssertEqual(result.response?.status, 200, "\(result)")
        XCTAssertEqual(result.response?.attempts, 2)
        let stats = try mock.stats()
        XCTAssertEqual(stats.connectionsDropped, 1)
        XCTAssertEqual(stats.perToken[victim], ["200": 2])  // dropped (recorded as 200) then answered
    }

    func testOnlyOneStreamBeforeTheFirstAuthenticatedRequest() async throws {
        let mock = try startMock(delayMs: 30)
        let client = try makeClient(connections: 1, streams: 100)
        // 100 requests arrive at once on a fresh pool: curl must wait for SETTINGS instead of opening 100 streams
        // (the mock refuses streams over its limit) or more connections.
        let results = await submitAll(client, (0..<100).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 100)
        let stats = try mock.stats()
        XCTAssertEqual(stats.refusedStreams, 0)
        XCTAssertEqual(stats.connectionsOpened, 1)
        XCTAssertEqual(stats.requests, 100, "no request was re-sent")
        XCTAssertGreaterThan(stats.maxConcurrentStreamsObserved, 1, "streams were multiplexed after auth")
        XCTAssertEqual(client.stats().retries, 0)
    }

    func testServerStreamLimitBelowTheClientsIsRespected() async throws {
        // The server allows 5 streams after auth; the client would use 50. curl must follow SETTINGS (the mock
        // refuses streams over its limit with RST_STREAM REFUSED_STREAM).
        let mock = try startMock(maxStreams: 5, delayMs: 20)
        let client = try makeClient(connections: 1, streams: 50)
        let results = await submitAll(client, (0..<200).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 200)
        let stats = try mock.stats(includeTokens: false)
        XCTAssertLessThanOrEqual(stats.maxConcurrentStreamsObserved, 5)
        XCTAssertEqual(stats.refusedStreams, 0)
        XCTAssertEqual(stats.connectionsOpened, 1)
    }

    func testManyConcurrentSendsUseFewConnectionsWithinStreamLimit() async throws {
        let mock = try startMock(delayMs: 20)
        let client = try makeClient(connections: 2, streams: 40)
        let results = await submitAll(client, (0..<1500).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 1500)
        let stats = try mock.stats(includeTokens: false)
        XCTAssertEqual(stats.connectionsOpened, 2)
        XCTAssertLessThanOrEqual(stats.maxConcurrentStreamsObserved, 40)
        XCTAssertGreaterThan(stats.maxConcurrentStreamsObserved, 10)
        XCTAssertEqual(stats.requests, 1500)
        let clientStats = client.stats()
        XCTAssertEqual(clientStats.responsesByStatus, [200: 1500])
        XCTAssertEqual(clientStats.requestsInFlight, 0)
        XCTAssertEqual(clientStats.connections, 2)
    }

    func testAConnectionNeverHoldsMoreEasyHandlesThanItsStreamWindow() async throws {
        // A job is final when its 200 header block is complete, before curl ends its transfer (often one
        // `curl_multi_perform` later), and the freed slot's next job used to start at the next turn's beginning,
        // before that transfer was back among the idle ones: a new easy handle each time (about 2,000 for 5,000
        // requests through a window of 1,200 in the counted fan-out). Many requests through a small window show it.
        let mock = try startMock()
        let client = try makeClient(connections: 2, streams: 10)
        let results = await submitAll(client, (0..<600).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 600)
        XCTAssertEqual(try mock.stats(includeTokens: false).requests, 600)
        let stats = client.stats()
        XCTAssertEqual(stats.responsesByStatus, [200: 600])
        XCTAssertGreaterThan(stats.transfersCreated, 0)
        XCTAssertLessThanOrEqual(stats.transfersCreated, 2 * 10)
        XCTAssertEqual(stats.requestsInFlight, 0)
    }

    func testConcurrentSubmittersShareTheWindowAndEveryResultArrivesOnce() async throws {
        let mock = try startMock(delayMs: 5)
        let client = try makeClient(connections: 2, streams: 16)
        let collector = ResultCollector(count: 1200)
        let (credentials, environment) = (credentials, environment)
        let requests = (0..<1200).map { alert(token($0)) }
        await withTaskGroup(of: Void.self) { group in
            for submitter in 0..<4 {
                group.addTask {
                    for index in stride(from: submitter, to: requests.count, by: 4) {
                        await client.submit(requests[index], credentials: credentials, environment: environment) {
                            collector.record(index, $0)
                        }
                    }
                }
            }
        }
        let results = await collector.all()
        XCTAssertEqual(collector.duplicates, 0)
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 1200)
        let stats = try mock.stats(includeTokens: false)
        XCTAssertEqual(stats.requests, 1200)
        XCTAssertLessThanOrEqual(stats.maxConcurrentStreamsObserved, 16)
        XCTAssertEqual(client.stats().requestsInFlight, 0)
        XCTAssertEqual(client.stats().waitingForWindow, 0)
    }

    func testSubmitSuspendsWhileTheWindowIsFull() async throws {
        let mock = try startMock(delayMs: 100)
        let client = try makeClient(connections: 1, streams: 4)
        let start = Date()
        let results = await submitAll(client, (0..<12).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 12)
        XCTAssertLessThanOrEqual(try mock.stats().maxConcurrentStreamsObserved, 4)
        // 12 requests through a window of 4 with 100 ms answers take at least 3 rounds.
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.3)
    }

    func testASubmitWaitingForAFullWindowLeavesWhenItsRunIsCancelled() async throws {
        // Answers take 5 s: the two requests on the wire hold the window long after the cancelled one has left.
        let mock = try startMock(delayMs: 5000)
        let client = try makeClient(connections: 1, streams: 2)
        let onTheWire = await submitEach(client, (0..<2).map { alert(token($0)) })
        let run = RetryScope()
        var waiting = alert(token(9))
        waiting.retries = run
        try await assertLeavesTheFullWindowUnsent(client, waiting, holding: onTheWire) { _ in run.cancel() }
        let answered = await onTheWire.all()
        XCTAssertEqual(answered.filter { $0.response?.status == 200 }.count, 2)
        XCTAssertEqual(try mock.requests().count, 2, "the cancelled request never went out")
    }

    func testASubmitWaitingForAFullWindowLeavesWhenItsTaskIsCancelled() async throws {
        // Answers take 5 s; the cancelled submit is answered `.cancelled(attempts: 0)` (never sent) long before.
        _ = try startMock(delayMs: 5000)
        let client = try makeClient(connections: 1, streams: 2)
        let onTheWire = await submitEach(client, (0..<2).map { alert(token($0)) })
        try await assertLeavesTheFullWindowUnsent(client, alert(token(8)), holding: onTheWire) { $0.cancel() }
    }

    /// Submits `waiting` from a task of its own behind the requests of `onTheWire`, which fill the window; once it
    /// waits for the window, `cancel` cancels it (given its task). It must leave at once: answered
    /// `.cancelled(attempts: 0)` (never sent) before any request holding the window was answered.
    private func assertLeavesTheFullWindowUnsent(
        _ client: APNsClient, _ waiting: APNsRequest, holding onTheWire: ResultCollector,
        file: StaticString = #filePath, line: UInt = #line, cancel: (Task<Void, Never>) -> Void
    ) async throws {
        let cancelled = ResultCollector(count: 1)
        let (credentials, environment) = (credentials, environment)
        let submitter = Task {
            await client.submit(waiting, credentials: credentials, environment: environment) { cancelled.record(0, $0) }
        }
        try await eventually("the third submit waits for the window") { client.stats().waitingForWindow == 1 }
        cancel(submitter)
        await submitter.value
        let results = await cancelled.all()
        guard case .failure(.cancelled(attempts: 0)) = results[0] else {
            return XCTFail("expected .cancelled(attempts: 0), got \(results[0])", file: file, line: line)
        }
        XCTAssertEqual(
            onTheWire.delivered, 0, "it left before the requests holding the window were answered", file: file,
            line: line)
        XCTAssertEqual(client.stats().waitingForWindow, 0, file: file, line: line)
    }

    func testOneProviderTokenIsReusedAcrossRequestsAndConnections() async throws {
        let mock = try startMock()
        let client = try makeClient(connections: 3, streams: 20)
        let results = await submitAll(client, (0..<300).map { alert(token($0)) })
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 300)
        let stats = try mock.stats(includeTokens: false)
        XCTAssertEqual(stats.connections.count, 3)
        for connection in stats.connections {
            XCTAssertEqual(connection.tokensSeen, 1)
            XCTAssertEqual(connection.boundKid, keyID)
        }
        let issuedAts = Set(try mock.requests().compactMap { $0.jwt?.iat })
        XCTAssertEqual(issuedAts.count, 1)
        XCTAssertEqual(client.stats().tokenRefreshes, 1)
    }

    func testExpiredProviderTokenIsRefreshedAndTheRequestRetriedOnce() async throws {
        let mock = try startMock()
        // The client's clock runs 30 minutes behind real time, so its first token is valid but 30 minutes old.
        let clock = TestClock(Date().addingTimeInterval(-30 * 60))
        let client = try makeClient(clock: clock.closure)
        let answered = await send(client, alert(token(1)))
        XCTAssertEqual(answered.response?.status, 200)

        clock.advance(minutes: 25)  // the token is now 25 minutes old: past the 20-minute refresh floor
        let device = token(2, prefix: "70")
        try mock.setBehaviour(token: device, .init(status: 403, reason: "ExpiredProviderToken", times: 1))
        let result = await send(client, alert(device))
        XCTAssertEqual(result.response?.status, 200, "\(result)")
        XCTAssertEqual(result.response?.attempts, 2)
        let seen = try mock.requests(token: device)
        XCTAssertEqual(seen.map(\.status), [403, 200])
        XCTAssertEqual(seen.count, 2)
        XCTAssertLessThan(seen[0].jwt?.iat ?? 0, seen[1].jwt?.iat ?? 0, "the retry used a new token")
        XCTAssertEqual(client.stats().tokenRefreshes, 2)
    }

    func testExpiredProviderTokenYoungerThanRefreshFloorIsAConfigurationFault() async throws {
        let mock = try startMock()
        // A clock 70 minutes slow mints tokens APNs already considers expired; minting again cannot help.
        let clock = TestClock(Date().addingTimeInterval(-70 * 60))
        let client = try makeClient(clock: clock.closure)
        let result = await send(client, alert(token(1)))
        guard case .failure(.configuration(.expiredTokenBeforeRefreshFloor)) = result else {
            return XCTFail("\(result)")
        }
        XCTAssertEqual(try mock.stats().requests, 1)
        XCTAssertEqual(client.stats().tokenRefreshes, 1)
        XCTAssertEqual(client.stats().configurationFailures, 1)
    }

    func testTooManyProviderTokenUpdatesIsRetriedLaterWithTheSameTokenNotLost() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let device = token(1, prefix: "71")
        try mock.setBehaviour(token: device, .init(status: 429, reason: "TooManyProviderTokenUpdates", times: 2))
        let result = await send(client, alert(device))
        XCTAssertEqual(result.response?.status, 200, "\(result)")
        XCTAssertEqual(result.response?.attempts, 3)
        XCTAssertEqual(try mock.requests(token: device).map(\.status), [429, 429, 200])
        XCTAssertEqual(Set(try mock.requests(token: device).compactMap { $0.jwt?.iat }).count, 1, "never re-signed")
        XCTAssertEqual(client.stats().tokenRefreshes, 1)
        XCTAssertEqual(client.stats().tokenUpdateRejections, 2)
    }

    func testTooManyProviderTokenUpdatesPastItsWindowIsAConfigurationFault() async throws {
        let mock = try startMock()
        var policy = Self.fastRetries
        policy.tokenUpdateRejectedWindow = 0.2
        let client = try makeClient(retry: policy)
        let device = token(1, prefix: "72")
        try mock.setBehaviour(token: device, .init(status: 429, reason: "TooManyProviderTokenUpdates"))
        let result = await send(client, alert(device))
        XCTAssertEqual(result, .failure(.configuration(.rejected(status: 429, reason: .tooManyProviderTokenUpdates))))
        XCTAssertGreaterThan(try mock.stats().requests, 1)
        XCTAssertEqual(client.stats().tokenRefreshes, 1)
    }

    func testUnknownKeyIsRejectedAsConfigurationFault() async throws {
        let mock = try startMock()
        let client = try makeClient()
        let stranger = APNsCredentials(teamID: teamID, keyID: "OTHERKEY99", key: key)
        let result = await client.send(alert(token(1)), credentials: stranger, environment: environment)
        guard case .failure(.configuration(.rejected(403, _))) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try mock.stats().requests, 1)
    }

    func testEachKeyGetsItsOwnConnections() async throws {
        let second = try TestKeys.makeP256()
        defer { TestKeys.remove(second) }
        let mock = try startMock(extraKeys: [(keyID: "KEY7654321", publicKeyPath: second.publicKeyPath)])
        let client = try makeClient(connections: 1, streams: 10)
        let other = APNsCredentials(
            teamID: teamID, keyID: "KEY7654321", key: try ES256PrivateKeyLoader.load(second.privateKeyPEM))
        let first = await submitAll(client, (0..<10).map { alert(token($0)) })
        let secondResults = await submitAll(client, (10..<20).map { alert(token($0)) }, credentials: other)
        XCTAssertEqual((first + secondResults).filter { $0.response?.status == 200 }.count, 20)
        let stats = try mock.stats(includeTokens: false)
        XCTAssertEqual(Set(stats.connections.compactMap(\.boundKid)), [keyID, "KEY7654321"])
        XCTAssertEqual(client.stats().pools, 2)
    }

    func testIdleConnectionIsReplacedAfterMaxIdle() async throws {
        let mock = try startMock()
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: 1, streamsPerConnection: 4, maxIdleSeconds: 1, retryPolicy: Self.fastRetries))
        clients.append(client)
        let first = await send(client, alert(token(1)))
        XCTAssertEqual(first.response?.status, 200)
        try await Task.sleep(nanoseconds: 2_200_000_000)  // real idle time: curl's connection age is wall-clock
        let second = await send(client, alert(token(2)))
        XCTAssertEqual(second.response?.status, 200)
        XCTAssertEqual(second.response?.attempts, 1, "a stale connection must not cost a failed attempt")
        XCTAssertEqual(try mock.stats().connectionsOpened, 2)
    }

    func testServerIdleTimeoutGoawayLeadsToANewConnection() async throws {
        let mock = try startMock()
        try mock.setConfig(.init(idleTimeoutSeconds: 0.5))
        let client = try makeClient(connections: 1, streams: 4)
        let first = await send(client, alert(token(1)))
        XCTAssertEqual(first.response?.status, 200)
        try await Task.sleep(nanoseconds: 1_200_000_000)  // the mock closes the idle connection with GOAWAY IdleTimeout
        let second = await send(client, alert(token(2)))
        XCTAssertEqual(second.response?.status, 200, "\(second)")
        XCTAssertEqual(second.response?.attempts, 1, "curl noticed the closed connection before sending")
        let stats = try mock.stats()
        XCTAssertEqual(stats.goawaysSent, 1)
        XCTAssertEqual(stats.connectionsOpened, 2)
    }

    func testShutdownLetsInFlightFinishWithinGracePeriod() async throws {
        let mock = try startMock(delayMs: 200)
        let client = try makeClient(connections: 1, streams: 10)
        let collector = await submitEach(client, (0..<5).map { alert(token($0)) })
        let unanswered = await client.shutdown(gracePeriod: .seconds(5))
        XCTAssertTrue(unanswered.isEmpty)
        let results = await collector.all()
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 5)
        XCTAssertEqual(try mock.stats().requests, 5)
        // After shutdown nothing is accepted.
        let answered = await send(client, alert(token(9)))
        XCTAssertEqual(answered, .failure(.shutdown))
    }

    func testShutdownReturnsWhenTheLastAnswerArrivesNotAtTheEndOfTheGracePeriod() async throws {
        _ = try startMock(delayMs: 300)
        let client = try makeClient(connections: 2, streams: 10)
        let collector = await submitEach(client, (0..<8).map { alert(token($0)) })
        let started = Date()
        let unanswered = await client.shutdown(gracePeriod: .seconds(120))
        // The last answer wakes the shutdown: it does not sit out the 120 s (and polls nothing meanwhile).
        XCTAssertLessThan(Date().timeIntervalSince(started), 60)
        XCTAssertTrue(unanswered.isEmpty)
        let results = await collector.all()
        XCTAssertEqual(results.filter { $0.response?.status == 200 }.count, 8)
        XCTAssertEqual(client.stats().requestsInFlight, 0)
    }

    func testShutdownHandsBackWhatIsUnansweredAfterTheGracePeriod() async throws {
        let mock = try startMock()
        let client = try makeClient(connections: 1, streams: 3)
        try mock.setBehaviour(token: "dd*", .init(delayMs: 10_000))
        let requests = (0..<6).map { alert(token($0, prefix: "dd")) }
        let collector = ResultCollector(count: requests.count)
        // 3 fill the window; the other 3 wait in `submit`, so they are submitted from separate tasks.
        let (credentials, environment) = (credentials, environment)
        for (index, request) in requests.enumerated() {
            Task {
                await client.submit(request, credentials: credentials, environment: environment) {
                    collector.record(index, $0)
                }
            }
        }
        try await eventually("3 requests wait for the window") { client.stats().waitingForWindow >= 3 }
        let started = Date()
        let unanswered = await client.shutdown(gracePeriod: .seconds(0.3))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(Set(unanswered.map(\.deviceToken)), Set(requests.map(\.deviceToken)))
        let results = await collector.all()
        XCTAssertEqual(results, Array(repeating: .failure(.shutdown), count: requests.count))
        XCTAssertEqual(collector.duplicates, 0)
        XCTAssertEqual(client.stats().shutdownFailures, requests.count)
    }
}
