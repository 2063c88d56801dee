import APNsClient
import Foundation
import Locking
import TestSupport
import XCTest

/// Connection faults with requests in flight, against the strict mock over real TLS + HTTP/2: GOAWAY after N
/// answers per connection, abrupt TCP closes, answer latency. Every device gets exactly one 200 (counted by the
/// mock as answers actually written) and nothing waits for the request timeout (30 s here).
final class APNsConnectionFaultTests: MockAPNsTestCase {
    private static let requestTimeout = 30.0

    /// What a run measured.
    private struct Run {
        var results: [APNsResult]
        var seconds: Double
        var slowestRequest: Double
        var mock: MockAPNs.Stats
        var tokens: [String]
    }

    /// Submits `count` alerts through a pool of `connections` × `streams` and waits for every result.
    private func run(count: Int, connections: Int, streams: Int, prefix: String) async throws -> Run {
        let client = try makeClient(connections: connections, streams: streams, requestTimeout: Self.requestTimeout)
        let tokens = (0..<count).map { token($0, prefix: prefix) }
        let collector = ResultCollector(count: count)
        let latencies = Locked([Double](repeating: 0, count: count))
        let started = Date()
        for (index, token) in tokens.enumerated() {
            let submitted = Date()
            await client.submit(alert(token), credentials: credentials, environment: environment) { result in
                let seconds = Date().timeIntervalSince(submitted)
                latencies.withLock { $0[index] = seconds }
                collector.record(index, result)
            }
        }
        let results = await collector.all()
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(collector.duplicates, 0, "every callback fires once")
        return Run(
            results: results, seconds: seconds, slowestRequest: latencies.withLock { $0.max() ?? 0 },
            mock: try mock.stats(), tokens: tokens)
    }

    /// Exactly one 200 written per device, every result a 200, and no request near the request timeout.
    private func assertEveryDeviceAnsweredOnceWithoutStall(
        _ run: Run, file: StaticString = #filePath, line: UInt = #line
    ) {
        let notOK = run.results.filter { $0.response?.status != 200 }
        XCTAssertEqual(notOK.count, 0, "\(notOK.prefix(3))", file: file, line: line)
        let sent = run.tokens.map { run.mock.sentPerToken[$0]?["200"] ?? 0 }
        XCTAssertEqual(sent.filter { $0 == 0 }.count, 0, "devices never answered", file: file, line: line)
        XCTAssertEqual(sent.filter { $0 > 1 }.count, 0, "devices answered twice", file: file, line: line)
        // A stranded request would only end at the 30 s request timeout (and the run with it), so a bound below it
        // tells them apart; 80 % of it leaves room for a loaded machine (beside the end-to-end lane on 2 cores shared
        // with other builds, a healthy run took 17 s and its slowest request 5.4 s).
        XCTAssertLessThan(run.slowestRequest, Self.requestTimeout * 0.8, file: file, line: line)
        XCTAssertLessThan(run.seconds, Self.requestTimeout * 0.8, file: file, line: line)
    }

    func testGoawayAfterEveryFewHundredAnswersWithLatencyAnswersEachDeviceOnceWithoutStall() async throws {
        let mock = try startMock(delayMs: 50)
        _ = try mock.setConfig(.init(delayJitterMs: 20, goawayAfter: 300))
        let run = try await run(count: 2500, connections: 2, streams: 100, prefix: "a1")
        assertEveryDeviceAnsweredOnceWithoutStall(run)
        XCTAssertGreaterThanOrEqual(run.mock.goawaysSent, 5, "the connections were replaced every 300 answers")
        XCTAssertEqual(run.mock.unanswered, 0, "GOAWAY's last-stream-id covered every stream sent before it")
    }

    func testSettingsRaiseRightAfterTheProbesAnswerWithGoawaysAndLatencyStrandsNoAnswer() async throws {
        let mock = try startMock(delayMs: 50)
        // Apple's order (issue 24): each new connection allows one stream, and the SETTINGS frame raising the
        // limit follows the probe's 200. Every GOAWAY opens a new connection while requests wait in curl for it:
        // sent there at once, all but one were refused, and curl closed the new connection for each refusal.
        _ = try mock.setConfig(.init(goawayAfter: 300, raiseStreamsAfterAnswer: true))
        let run = try await run(count: 3000, connections: 6, streams: 200, prefix: "a4")
        assertEveryDeviceAnsweredOnceWithoutStall(run)
        // 3,000 answers at 300 per connection replace ten connections when curl spreads them evenly over the six;
        // on a loaded machine it does not (one run saw 5 GOAWAYs), so the scenario asks for several replacements,
        // each with requests waiting for the new connection, not for one per original connection.
        XCTAssertGreaterThanOrEqual(run.mock.goawaysSent, 3, "connections were replaced with requests waiting")
        XCTAssertLessThanOrEqual(
            run.mock.connectionsOpened, 6 + run.mock.goawaysSent, "one new connection per GOAWAY, none abandoned")
    }

    func testAbruptCloseWithRequestsInFlightResendsTheUnansweredOnly() async throws {
        let mock = try startMock(delayMs: 50)
        _ = try mock.setConfig(.init(delayJitterMs: 20, dropAfter: 250))
        let run = try await run(count: 2000, connections: 2, streams: 100, prefix: "a2")
        assertEveryDeviceAnsweredOnceWithoutStall(run)
        XCTAssertGreaterThanOrEqual(run.mock.connectionsDropped, 5)
        XCTAssertGreaterThan(run.mock.unanswered, 0, "requests were in flight when the connections were cut")
        // Every request cut off mid-flight was sent again (besides those still in transit when the socket died,
        // which the mock never saw), and none of them twice: see the per-device count above.
        let resent = run.results.reduce(0) { $0 + max(0, ($1.response?.attempts ?? 1) - 1) }
        XCTAssertGreaterThanOrEqual(resent, run.mock.unanswered)
    }

    func testMixOfGoawaysAbruptClosesAndLatencyAnswersEachDeviceOnceWithoutStall() async throws {
        let mock = try startMock(delayMs: 30)
        // GOAWAY after 180 answers, then the connection is cut 10 answers later while still draining: streams
        // the GOAWAY promised to process die unanswered and must be re-sent, answered ones must not.
        _ = try mock.setConfig(.init(delayJitterMs: 40, goawayAfter: 180, dropAfter: 190))
        let run = try await run(count: 3000, connections: 3, streams: 80, prefix: "a3")
        assertEveryDeviceAnsweredOnceWithoutStall(run)
        XCTAssertGreaterThan(run.mock.goawaysSent, 0)
        XCTAssertGreaterThan(run.mock.connectionsDropped, 0)
    }

    func testConnectionResetRightAfterAnswersLosesNoDeviceAndSettlesEveryRequestOnce() async throws {
        let mock = try startMock(delayMs: 30)
        // Each batch: one slow request (curl reads the socket on its behalf first), 30 answered together, and one
        // whose answer is followed at once by a TCP reset. libcurl 7.88 then reports most answered transfers as
        // send/receive failures; those whose 200 it had parsed must count as answered, the rest are re-sent.
        try mock.setBehaviour(token: "dd*", .init(delayMs: 600))
        try mock.setBehaviour(token: "cc*", .init(action: .answerThenDrop))
        let client = try makeClient(connections: 1, streams: 50, requestTimeout: Self.requestTimeout)
        _ = await send(client, alert(token(0, prefix: "ee")))  // warm: the batches go out at once
        var tokens: [String] = []
        var results: [APNsResult] = []
        let started = Date()
        for round in 0..<6 {
            var batch = [token(round, prefix: "dd")]
            batch += (0..<30).map { token(round * 100 + $0, prefix: "bb") }
            batch.append(token(round, prefix: "cc"))
            tokens += batch
            results += await submitAll(client, batch.map { alert($0) })
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), Self.requestTimeout / 2)
        XCTAssertEqual(
            results.filter { $0.response?.status == 200 }.count, tokens.count,
            "\(results.filter { $0.response?.status != 200 }.prefix(3))")
        let stats = try mock.stats()
        // At least one reset per batch. On a loaded machine libcurl may not have parsed a `cc` request's own 200
        // before the reset: that request is then unanswered, re-sent (correctly), and the mock resets again.
        XCTAssertGreaterThanOrEqual(stats.connectionsDropped, 6)
        let sent = tokens.map { stats.sentPerToken[$0]?["200"] ?? 0 }
        XCTAssertEqual(sent.filter { $0 == 0 }.count, 0, "no device is missing")
        // What libcurl 7.88 drops unread from the socket buffer when the connection resets is sent again (at
        // least once); the slow requests are cut off unanswered and re-sent once each.
        XCTAssertEqual(
            tokens.filter { $0.hasPrefix("dd") }.map { stats.sentPerToken[$0]?["200"] ?? 0 },
            Array(repeating: 1, count: 6))
    }
}
