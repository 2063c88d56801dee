import Foundation
import HTTPClient
import XCTest

@testable import APNsClient

/// One connection slot's scheduling without curl, sockets or a clock: the cold-connection gate, what GOAWAY and
/// resets re-send, retry delays, token refreshes and shutdown. Time is whatever the test says it is.
final class APNsConnectionStateMachineTests: XCTestCase {
    private typealias Machine = APNsConnectionStateMachine
    private static let second: UInt64 = 1_000_000_000
    /// No jitter, so delays are exact: 0.5 s, 1 s, 2 s, …
    private var machine = Machine(
        retryPolicy: APNsRetryPolicy(maxAttempts: 4, baseDelay: 0.5, maxDelay: 4, maxTotalDelay: 10, jitter: 0),
        coldAfterIdleNanos: 60 * second, seed: 42)
    private var nextStream = 0
    /// Which job went out on which stream.
    private var streams: [Int: APNsJob] = [:]

    private func job(_ token: String, deadline: UInt64? = nil, retries: RetryScope? = nil) throws -> APNsJob {
        var request = APNsRequest(
            deviceToken: token, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), topic: "com.example.app")
        request.retries = retries
        let prepared = try APNsHeaderRules.prepare(request)
        return APNsJob(request: request, prepared: prepared, deadline: deadline) { _ in }
    }

    private func jobs(_ count: Int) throws -> [APNsJob] {
        try (0..<count).map { try job(String(format: "%064x", $0 + 1)) }
    }

    /// The local port of the connection curl sends on (`sending`).
    private var port = 40_000

    /// Starts every job the machine lets start now, as the driver would, and lets curl send each on `port` (the
    /// usual case: a connection is there); returns their streams.
    @discardableResult
    private func startAll(now: UInt64 = 0, send: Bool = true) -> [Int] {
        var started: [Int] = []
        while let job = machine.nextToStart() {
            nextStream += 1
            machine.started(job, stream: nextStream, now: now)
            streams[nextStream] = job
            if send { XCTAssertTrue(machine.sending(stream: nextStream, connection: port)) }
            started.append(nextStream)
        }
        return started
    }

    /// The stream's `200` header block arrives during a perform; returns what settling it after the perform does.
    private func answerOK(_ stream: Int, now: UInt64 = 0) -> [Machine.Action] {
        machine.headersComplete(stream: stream, status: 200, apnsID: "id-\(stream)", apnsUniqueID: nil)
        var actions: [Machine.Action] = []
        while let (job, response) = machine.nextAnsweredEarly(now: now) {
            actions.append(.finish(job, .response(response)))
        }
        return actions
    }

    private func fail(
        _ stream: Int, _ kind: APNsTransportError.Kind = .connection, status: Int = 0,
        now: UInt64 = 0
    ) -> [Machine.Action] {
        machine.ended(
            stream: stream,
            Machine.Ending(
                status: status, failure: APNsTransportError(kind: kind, code: 56, message: "Connection reset")),
            now: now)
    }

    private func answer(_ stream: Int, status: Int, reason: APNsReason, now: UInt64 = 0) -> [Machine.Action] {
        machine.ended(stream: stream, Machine.Ending(status: status, reason: reason), now: now)
    }

    /// The jobs finished by `actions`, with their results.
    private func finished(_ actions: [Machine.Action]) -> [(job: APNsJob, result: APNsResult)] {
        actions.compactMap { if case .finish(let job, let result) = $0 { (job, result) } else { nil } }
    }

    private func retries(_ actions: [Machine.Action]) -> Int {
        actions.filter { if case .countRetry = $0 { true } else { false } }.count
    }

    private func warmUp() throws {
        machine.enqueue(try job(String(repeating: "f", count: 64)))
        let probe = startAll()
        XCTAssertEqual(finished(answerOK(probe[0])).count, 1)
        XCTAssertTrue(machine.ended(stream: probe[0], Machine.Ending(status: 200), now: 0).isEmpty, "settled already")
        XCTAssertTrue(machine.isWarm)
    }

    // MARK: - Cold-connection gate

    func testColdConnectionAdmitsOneProbeAtATime() throws {
        for job in try jobs(3) { machine.enqueue(job) }
        XCTAssertEqual(startAll(), [1], "one stream until APNs accepted the token")
        XCTAssertEqual(machine.readyCount, 2)
        XCTAssertEqual(machine.pollTimeout(now: 0), 1000, "held back by the gate: wait for the answer, not spin")
        let done = finished(answerOK(1))
        XCTAssertEqual(done.map(\.result.response?.status), [200])
        XCTAssertEqual(done.first?.result.response?.apnsID, "id-1")
        XCTAssertEqual(machine.pollTimeout(now: 0), 0, "the answer opens the gate")
        XCTAssertEqual(startAll(), [2, 3])
    }

    func testAnswersOfOnePerformAreSettledInTheOrderTheyArrived() throws {
        try warmUp()
        for job in try jobs(3) { machine.enqueue(job) }
        let started = startAll()
        for stream in [started[2], started[0], started[1]] {
            machine.headersComplete(stream: stream, status: 200, apnsID: "id-\(stream)", apnsUniqueID: nil)
        }
        var settled: [String?] = []
        while let (job, response) = machine.nextAnsweredEarly(now: 0) {
            XCTAssertTrue(job === streams[Int(response.apnsID!.dropFirst(3))!])
            XCTAssertEqual(response.attempts, 1)
            settled.append(response.apnsID)
        }
        XCTAssertEqual(settled, [started[2], started[0], started[1]].map { "id-\($0)" })
        XCTAssertTrue(machine.ended(stream: started[0], Machine.Ending(status: 200), now: 0).isEmpty, "settled")
    }

    func testAJobWaitingForATransferLetsTheLoopWaitForTheNetwork() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "e", count: 64)))
        XCTAssertEqual(machine.pollTimeout(now: 0), 0, "a transfer is free: start it now")
        // Every transfer is attached (the driver's window of handles): the one that ends wakes the poll, so the
        // loop must not spin meanwhile.
        XCTAssertEqual(machine.pollTimeout(now: 0, transferFree: false), 1000)
        XCTAssertEqual(machine.readyCount, 1)
    }

    func testFailedProbeLetsTheNextProbeStartButStaysCold() throws {
        for job in try jobs(2) { machine.enqueue(job) }
        XCTAssertEqual(startAll(), [1])
        XCTAssertEqual(retries(fail(1)), 1, "nothing answered: re-sent at once")
        XCTAssertFalse(machine.isWarm)
        XCTAssertEqual(startAll(), [2], "still one probe at a time")
        XCTAssertEqual(streams[2]?.request.deviceToken, String(format: "%064x", 2), "waiting jobs keep their order")
    }

    func testConnectionResetMakesTheConnectionColdAgain() throws {
        try warmUp()
        for job in try jobs(3) { machine.enqueue(job) }
        XCTAssertEqual(startAll().count, 3)
        _ = fail(2)
        XCTAssertFalse(machine.isWarm)
        port += 1  // curl opens a new connection
        XCTAssertEqual(startAll().count, 1, "the re-sent request probes the new connection alone")
        XCTAssertEqual(machine.readyCount, 0)
    }

    func testIdleWarmConnectionGoesColdAfterItsIdleLimit() throws {
        try warmUp()
        machine.tick(now: 59 * Self.second)
        XCTAssertTrue(machine.isWarm)
        machine.tick(now: 61 * Self.second)
        XCTAssertFalse(machine.isWarm, "APNs or curl may have closed it meanwhile")
        for job in try jobs(2) { machine.enqueue(job) }
        XCTAssertEqual(startAll(now: 61 * Self.second).count, 1)
    }

    // MARK: - GOAWAY, resets and the ledger's rules

    func testGoAwayResendsUnansweredStreamsOnly() throws {
        try warmUp()
        let all = try jobs(5)
        for job in all { machine.enqueue(job) }
        let sent = startAll()
        XCTAssertEqual(sent.count, 5)
        // Streams 2 and 3 are answered, then GOAWAY with a last-stream-id below 4 and the connection closes: curl
        // ends every transfer as a failure; stream 4's 200 status line had arrived, its header block not.
        var actions = answerOK(sent[1]) + answerOK(sent[2])
        actions += fail(sent[0]) + fail(sent[1], status: 200) + fail(sent[2], status: 200)
        actions += fail(sent[3], status: 200) + fail(sent[4])
        let done = finished(actions)
        XCTAssertEqual(
            done.map { $0.job.request.deviceToken }.sorted(),
            [all[1], all[2], all[3]].map(\.request.deviceToken).sorted(), "answered ones finish once each")
        XCTAssertTrue(done.allSatisfy { $0.result.response?.status == 200 })
        XCTAssertEqual(retries(actions), 2)
        XCTAssertEqual(machine.readyCount, 2)
        XCTAssertEqual(machine.streamsInFlight, 0)
        XCTAssertEqual(startAll().count, 1, "cold after the connection died")
        let resent = streams[nextStream]
        XCTAssertTrue(resent === all[0], "the unanswered stream goes first")
        XCTAssertEqual(resent?.attempts, 2)
    }

    func testRequestAnsweredTwoHundredIsNeverResentWhenCurlLaterReportsAReset() throws {
        try warmUp()
        let one = try job(String(repeating: "a", count: 64))
        machine.enqueue(one)
        let stream = startAll()[0]
        let done = finished(answerOK(stream))
        XCTAssertEqual(done.count, 1)
        XCTAssertEqual(done.first?.result.response?.attempts, 1)
        XCTAssertTrue(fail(stream, .connection, status: 200).isEmpty, "already settled: nothing more to do")
        XCTAssertEqual(machine.readyCount + machine.delayedCount, 0)
    }

    func testErrorAnswerIsFinalWithItsReason() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "b", count: 64)))
        let stream = startAll()[0]
        machine.headersComplete(stream: stream, status: 410, apnsID: nil, apnsUniqueID: nil)
        XCTAssertNil(machine.nextAnsweredEarly(now: 0), "an error's reason is in the body, still to come")
        let done = finished(answer(stream, status: 410, reason: .unregistered))
        XCTAssertEqual(done.first?.result.response?.status, 410)
        XCTAssertEqual(done.first?.result.response?.reason, .unregistered)
        XCTAssertEqual(done.first?.result.response?.attempts, 1)
    }

    func testFatalTransportFailureFinishesWithAWarning() throws {
        machine.enqueue(try job(String(repeating: "c", count: 64)))
        let stream = startAll()[0]
        let actions = fail(stream, .fatal)
        XCTAssertTrue(actions.contains { if case .warnTransferFailed = $0 { true } else { false } })
        guard case .failure(.transport(let error, let attempts))? = finished(actions).first?.result else {
            return XCTFail("\(actions)")
        }
        XCTAssertEqual(error.kind, .fatal)
        XCTAssertEqual(attempts, 1)
    }

    // MARK: - Retry delays

    func testServerErrorIsRetriedAfterItsBackoffDelay() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "d", count: 64)))
        let stream = startAll(now: Self.second)[0]
        let actions = answer(stream, status: 503, reason: .serviceUnavailable, now: Self.second)
        XCTAssertEqual(retries(actions), 1)
        XCTAssertTrue(finished(actions).isEmpty)
        XCTAssertEqual(machine.delayedCount, 1)
        XCTAssertEqual(machine.pollTimeout(now: Self.second), 500, "wakes when the retry is due")
        machine.tick(now: Self.second + Self.second / 2 - 1)
        XCTAssertEqual(machine.readyCount, 0, "not before its delay")
        machine.tick(now: Self.second + Self.second / 2)
        XCTAssertEqual(machine.readyCount, 1)
        XCTAssertEqual(startAll().count, 1)
    }

    func testARetryThatWouldGoOutAfterTheDeadlineEndsExpiredAtOnce() throws {
        try warmUp()
        // The 503's retry is due 0.5 s after the answer at 1 s; the deadline is 0.2 s after it.
        machine.enqueue(try job(String(repeating: "d", count: 64), deadline: Self.second + Self.second / 5))
        let stream = startAll(now: Self.second)[0]
        let actions = answer(stream, status: 503, reason: .serviceUnavailable, now: Self.second)
        XCTAssertEqual(retries(actions), 0)
        XCTAssertEqual(finished(actions).map(\.result), [.failure(.expired(attempts: 1))])
        XCTAssertEqual(machine.delayedCount, 0)

        machine.enqueue(try job(String(repeating: "c", count: 64), deadline: 2 * Self.second))
        let inTime = startAll(now: Self.second)[0]
        XCTAssertEqual(
            retries(answer(inTime, status: 503, reason: .serviceUnavailable, now: Self.second)), 1,
            "a retry before the deadline still goes")
    }

    func testACancelledRunsWaitingRetryEndsCancelledAtTheNextTickAndIsNeverSent() throws {
        try warmUp()
        let scope = RetryScope()
        machine.enqueue(try job(String(repeating: "d", count: 64), retries: scope))
        let stream = startAll(now: Self.second)[0]
        XCTAssertEqual(retries(answer(stream, status: 503, reason: .serviceUnavailable, now: Self.second)), 1)
        XCTAssertEqual(machine.delayedCount, 1)
        XCTAssertLessThanOrEqual(machine.pollTimeout(now: Self.second), 1000, "the loop wakes within a second")
        scope.cancel()
        let ended = machine.tick(now: Self.second + 1)
        XCTAssertEqual(finished(ended).map(\.result), [.failure(.cancelled(attempts: 1))])
        XCTAssertEqual(machine.delayedCount, 0)
        XCTAssertEqual(machine.readyCount, 0)
        XCTAssertTrue(machine.tick(now: 10 * Self.second).isEmpty)

        // Answered after the cancel: no retry is scheduled at all.
        machine.enqueue(try job(String(repeating: "c", count: 64), retries: scope))
        let late = startAll(now: Self.second)[0]
        let actions = answer(late, status: 503, reason: .serviceUnavailable, now: Self.second)
        XCTAssertEqual(finished(actions).map(\.result), [.failure(.cancelled(attempts: 1))])
        XCTAssertEqual(retries(actions), 0)
    }

    func testConnectionLossIsResentAtOnceThenWithBackoff() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "e", count: 64)))
        var stream = startAll()[0]
        XCTAssertEqual(retries(fail(stream)), 1)
        XCTAssertEqual(machine.readyCount, 1, "first loss: at once")
        stream = startAll()[0]
        _ = fail(stream)
        XCTAssertEqual(machine.readyCount, 0)
        XCTAssertEqual(machine.delayedCount, 1, "second loss: after a delay")
    }

    func testRetryPolicyGivesUpAfterMaxAttempts() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "1", count: 64)))
        // Attempts at 1, 5, 9 and 13 s: each after its delay (0.5, 1, 2 s) and within the 10 s total.
        var now = Self.second
        var last: [Machine.Action] = []
        for _ in 0..<4 {
            machine.tick(now: now)
            guard let stream = startAll(now: now).first else { return XCTFail("nothing to start") }
            last = answer(stream, status: 500, reason: .internalServerError, now: now)
            now += 4 * Self.second
        }
        XCTAssertEqual(finished(last).first?.result.response?.status, 500)
        XCTAssertEqual(finished(last).first?.result.response?.attempts, 4)
    }

    // MARK: - Provider tokens

    func testExpiredProviderTokenAsksForAFreshTokenOnceThenIsAConfigurationFault() throws {
        try warmUp()
        let one = try job(String(repeating: "2", count: 64))
        machine.enqueue(one)
        var stream = startAll()[0]
        let actions = answer(stream, status: 403, reason: .expiredProviderToken)
        guard case .refreshToken(let asked)? = actions.first, asked === one else { return XCTFail("\(actions)") }
        XCTAssertEqual(machine.readyCount, 0, "waits for the token")
        let token = ProviderTokenState.Token(jwt: "fresh", issuedAt: 1, generation: 2)
        XCTAssertEqual(retries(machine.tokenRefreshed(one, .success(token))), 1)
        XCTAssertEqual(one.overrideToken, token)
        stream = startAll()[0]
        let second = answer(stream, status: 403, reason: .expiredProviderToken)
        XCTAssertTrue(
            second.contains { if case .warnCredentialsRejected(.expiredProviderToken) = $0 { true } else { false } })
        XCTAssertEqual(
            finished(second).first?.result,
            .failure(.configuration(.rejected(status: 403, reason: .expiredProviderToken))))
    }

    func testTokenRefreshFailureFinishesTheJob() throws {
        machine.enqueue(try job(String(repeating: "3", count: 64)))
        let one = try XCTUnwrap(machine.nextToStart())
        let failure = APNsFailure.configuration(.expiredTokenBeforeRefreshFloor(ageSeconds: 60))
        XCTAssertEqual(finished(machine.tokenRefreshed(one, .failure(failure))).first?.result, .failure(failure))
    }

    func testTokenUpdateRejectedWaitsOutItsDelayWhenNoOtherTokenExists() throws {
        try warmUp()
        let one = try job(String(repeating: "4", count: 64))
        machine.enqueue(one)
        let stream = startAll()[0]
        let actions = answer(stream, status: 429, reason: .tooManyProviderTokenUpdates)
        XCTAssertTrue(actions.contains { if case .countTokenUpdateRejected = $0 { true } else { false } })
        guard case .resolveRejectedToken(let asked)? = actions.last, asked === one else { return XCTFail("\(actions)") }
        XCTAssertEqual(retries(machine.rejectedTokenResolved(one, .success(.retryLater))), 1)
        XCTAssertEqual(machine.delayedCount, 1)
        XCTAssertGreaterThan(machine.pollTimeout(now: 0), 0)
        XCTAssertEqual(one.tokenUpdateRejections, 1, "not counted against the retry policy's attempts")
    }

    func testTokenUpdateRejectedRetriesAtOnceWithAnotherNodesToken() throws {
        try warmUp()
        let one = try job(String(repeating: "5", count: 64))
        machine.enqueue(one)
        _ = answer(startAll()[0], status: 429, reason: .tooManyProviderTokenUpdates)
        let token = ProviderTokenState.Token(jwt: "theirs", issuedAt: 1, generation: 3)
        XCTAssertEqual(retries(machine.rejectedTokenResolved(one, .success(.retryNow(token)))), 1)
        XCTAssertEqual(machine.readyCount, 1)
        XCTAssertEqual(one.overrideToken, token)
    }

    // MARK: - Start failures and shutdown

    func testStartFailureFinishesTheJobAndTheNextOneMayStart() throws {
        for job in try jobs(2) { machine.enqueue(job) }
        let first = try XCTUnwrap(machine.nextToStart())
        let failure = APNsFailure.configuration(.signingFailed("no key"))
        XCTAssertEqual(finished(machine.startFailed(first, failure)).first?.result, .failure(failure))
        XCTAssertEqual(startAll(), [1], "the gate counts streams, not attempts to start one")
    }

    func testAbortReturnsEveryUnfinishedJobOnce() throws {
        try warmUp()
        let all = try jobs(5)
        for job in all.prefix(3) { machine.enqueue(job) }
        let sent = startAll()
        _ = answerOK(sent[0])  // finished: not handed back
        _ = answer(sent[1], status: 503, reason: .serviceUnavailable)  // delayed retry
        machine.enqueue(all[3])
        machine.enqueue(all[4])
        let aborted = machine.abort()
        XCTAssertEqual(
            aborted.map(\.request.deviceToken),
            [all[2], all[3], all[4], all[1]].map(\.request.deviceToken), "in flight, ready, delayed")
        XCTAssertEqual(machine.readyCount + machine.delayedCount, 0)
        XCTAssertTrue(machine.abort().isEmpty)
    }

    // MARK: - Connections (issue 24)

    func testRequestHeldBackFromAnUnansweredConnectionStartsAgainWithoutCountingAnAttempt() throws {
        try warmUp()
        let waiting = try jobs(3)
        for job in waiting { machine.enqueue(job) }
        let started = startAll(send: false)  // GOAWAY: they wait in curl for the next connection
        XCTAssertEqual(started.count, 3)
        port += 1
        XCTAssertTrue(machine.sending(stream: started[0], connection: port))
        XCTAssertFalse(machine.sending(stream: started[1], connection: port))
        XCTAssertFalse(machine.sending(stream: started[2], connection: port))
        let aborted = APNsTransportError(kind: .fatal, code: 42, message: "operation aborted by pre-request callback")
        XCTAssertTrue(machine.ended(stream: started[1], Machine.Ending(status: 0, failure: aborted), now: 0).isEmpty)
        XCTAssertEqual(waiting[1].attempts, 0, "never sent")
        XCTAssertEqual(machine.readyCount, 1)
        XCTAssertNil(machine.nextToStart(), "the new connection has not answered")
        XCTAssertEqual(finished(answerOK(started[0])).count, 1)
        XCTAssertTrue(machine.ended(stream: started[2], Machine.Ending(status: 0, failure: aborted), now: 0).isEmpty)
        XCTAssertEqual(startAll().count, 2)
        XCTAssertEqual(waiting[1].attempts, 1)
    }

    func testRequestTimeoutWarnsWithTheStateOfTheStreamAndItsConnection() throws {
        try warmUp()
        machine.enqueue(try job(String(repeating: "a", count: 64)))
        port += 1
        let probe = startAll()
        let actions = fail(probe[0], .timeout)
        let warnings = actions.compactMap { action -> (APNsStreamLedger.Diagnosis, Int)? in
            if case .warnRequestTimedOut(let diagnosis, let attempts) = action { (diagnosis, attempts) } else { nil }
        }
        XCTAssertEqual(warnings.count, 1)
        XCTAssertEqual(warnings.first?.0.phase, .sent)
        XCTAssertEqual(warnings.first?.0.probe, true)
        XCTAssertEqual(warnings.first?.0.connectionWarm, false)
        XCTAssertEqual(warnings.first?.1, 1)
    }
}
