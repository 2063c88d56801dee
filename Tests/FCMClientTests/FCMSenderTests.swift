import FCMClient
import Foundation
import HTTPClient
import JSON
import Locking
import TestSupport
import XCTest

/// `FCMSender` against the strict FCM stand-in (`Tests/Support/mock_fcm.py`) over TLS and HTTP/2: the token
/// endpoint checks every assertion, `messages:send` checks the bearer token and the message, and marker tokens
/// script FCM's errors.
final class FCMSenderTests: XCTestCase {
    private var fixture: ServiceAccountFixture!
    private var directory: String!
    private var mock: MockFCM!

    override func setUpWithError() throws {
        fixture = try ServiceAccountFixture()
        directory = try TestKeys.makeTemporaryDirectory()
        let file = directory + "/service-account.json"
        try Data(fixture.json()).write(to: URL(fileURLWithPath: file))
        mock = try MockFCM.start(serviceAccountFile: file, retryAfterSeconds: 1)
    }

    override func tearDown() {
        mock?.stop()
        fixture?.remove()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The account as the client sees it: the stand-in's token endpoint as `token_uri` (the assertion's `aud`).
    private func account() throws -> ServiceAccount {
        try ServiceAccount(json: fixture.json(["token_uri": .string(mock.tokenURI)]))
    }

    private func makeSender(
        connections: Int = 2, streams: Int = 50,
        retry: FCMRetryPolicy = FCMRetryPolicy(
            maxAttempts: 3, initialDelay: 0.05, maxDelay: 5, quotaDelay: 0, maxTotalDelay: 30)
    ) throws -> FCMSender {
        try FCMSender(
            account: account(),
            configuration: FCMSenderConfiguration(
                baseURL: mock.baseURL, caFile: mock.caFile, connections: connections, streamsPerConnection: streams,
                requestTimeout: 10, connectTimeout: 5, retryPolicy: retry))
    }

    /// One connection of 10 streams to the stand-in with the configuration's timeouts, for the access-token tests:
    /// `account` (the stand-in's own when nil) and the given retry and token policies.
    private func oneConnectionSender(
        account: ServiceAccount? = nil, retry: FCMRetryPolicy = FCMRetryPolicy(),
        tokenPolicy: AccessTokenPolicy = AccessTokenPolicy()
    ) throws -> FCMSender {
        try FCMSender(
            account: account ?? self.account(),
            configuration: FCMSenderConfiguration(
                baseURL: mock.baseURL, caFile: mock.caFile, connections: 1, streamsPerConnection: 10,
                retryPolicy: retry, tokenPolicy: tokenPolicy))
    }

    private func template() throws -> FCMMessageTemplate {
        try FCMMessageTemplate(
            section: JSONValue.parse(Array(#"{"notification":{"title":"Hi","body":"there"},"data":{"k":"v"}}"#.utf8))!,
            instanceID: "instance-1", publishID: "pubid-1")
    }

    private func stat(_ name: String) throws -> Int { try mock.stats()[name]?.intValue ?? -1 }

    func testAcceptedMessageReportsItsNameAndTheTokenIsFetchedOnceForManySends() async throws {
        let sender = try makeSender()
        let message = try template()
        let results = Locked<[FCMResult]>([])
        for index in 0..<40 {
            await sender.submit(FCMRequest(token: "device-\(index)", message: message)) { result in
                results.withLock { $0.append(result) }
            }
        }
        let unanswered = await sender.shutdown(gracePeriod: .seconds(20))
        XCTAssertEqual(unanswered, [])
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 40)
        for result in all {
            guard case .response(.sent(let name), attempts: 1) = result else { return XCTFail("\(result)") }
            XCTAssertTrue(name.hasPrefix("projects/\(mock.project)/messages/"), name)
        }
        XCTAssertEqual(try stat("token_requests"), 1, "one fetch in flight; every other send waited for it")
        XCTAssertEqual(try stat("sends"), 40)
        XCTAssertEqual(sender.stats().tokenFetches, 1)
        XCTAssertEqual(sender.stats().sent, 40)
        XCTAssertNil(sender.authProblem)
    }

    func testExpiredTokenIsRefreshedOnceAndTheMessageResent() async throws {
        let sender = try makeSender()
        let message = try template()
        guard case .response(.sent, attempts: 1) = await sender.send(FCMRequest(token: "before", message: message))
        else {
            return XCTFail("first send")
        }
        try mock.expireTokens()
        let result = await sender.send(FCMRequest(token: "after", message: message))
        guard case .response(.sent, attempts: 2) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try stat("token_requests"), 2)
        // The stand-in records a 401 before reading the body (no token): the send sequence is ok, 401, re-send ok.
        XCTAssertEqual(try mock.requests().map { $0["status"]?.intValue }, [200, 401, 200])
        XCTAssertEqual(try mock.requests(token: "after").count, 1)
        XCTAssertEqual(sender.stats().accessTokenRejections, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testMarkerTokensAreClassifiedAndNotRetried() async throws {
        let sender = try makeSender()
        let message = try template()
        // One accepted message first: from then on a SENDER_ID_MISMATCH is one foreign token, not a wrong project.
        guard case .response(.sent, _) = await sender.send(FCMRequest(token: "device-ok", message: message)) else {
            return XCTFail("first send")
        }
        let unregistered = await sender.send(FCMRequest(token: "unregistered-1", message: message))
        guard case .response(.invalidToken(let info), attempts: 1) = unregistered else {
            return XCTFail("\(unregistered)")
        }
        XCTAssertEqual(info.errorCode, "UNREGISTERED")
        let mismatch = await sender.send(FCMRequest(token: "mismatch-1", message: message))
        guard case .response(.senderMismatch, attempts: 1) = mismatch else { return XCTFail("\(mismatch)") }
        let invalid = await sender.send(FCMRequest(token: "invalid-1", message: message))
        guard case .response(.invalidToken(let invalidInfo), attempts: 1) = invalid else {
            return XCTFail("\(invalid)")
        }
        XCTAssertEqual(invalidInfo.httpStatus, 400)
        for token in ["unregistered-1", "mismatch-1", "invalid-1"] {
            XCTAssertEqual(try mock.requests(token: token).count, 1, token)
        }
        XCTAssertEqual(sender.stats().invalidTokens, 3)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testQuotaAndUnavailableAreRetriedAfterRetryAfterThenSucceed() async throws {
        let sender = try makeSender()
        let message = try template()
        try mock.setBehaviour(token: "flaky-quota", answer: "quota", times: 1)
        try mock.setBehaviour(token: "flaky-unavailable", answer: "unavailable", times: 1)
        async let quota = sender.send(FCMRequest(token: "flaky-quota", message: message))
        async let unavailable = sender.send(FCMRequest(token: "flaky-unavailable", message: message))
        let results = await [quota, unavailable]
        for (token, result) in zip(["flaky-quota", "flaky-unavailable"], results) {
            guard case .response(.sent, attempts: 2) = result else { return XCTFail("\(token): \(result)") }
            let requests = try mock.requests(token: token)
            XCTAssertEqual(requests.map { $0["status"]?.intValue }, [token == "flaky-quota" ? 429 : 503, 200])
            let times = requests.compactMap { request -> Double? in
                if case .double(let time)? = request["time"] { return time }
                return request["time"]?.intValue.map(Double.init)
            }
            XCTAssertEqual(times.count, 2)
            // Retry-After: 1 from the stand-in; the policy's own delay is 0.05 s.
            XCTAssertGreaterThanOrEqual(times[1] - times[0], 0.95, token)
        }
        XCTAssertEqual(sender.stats().retries, 2)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testManyConcurrentSendsAreMultiplexedOnFewConnections() async throws {
        let sender = try makeSender(connections: 2, streams: 50)
        let message = try template()
        let sent = Locked(0)
        for index in 0..<400 {
            await sender.submit(FCMRequest(token: "fan-\(index)", message: message)) { result in
                if case .response(.sent, _) = result { sent.withLock { $0 += 1 } }
            }
        }
        let unanswered = await sender.shutdown(gracePeriod: .seconds(30))
        XCTAssertEqual(unanswered, [])
        XCTAssertEqual(sent.withLock { $0 }, 400)
        let stats = try mock.stats()
        XCTAssertEqual(stats["sends"]?.intValue, 400)
        // Two multis, one HTTP/2 connection each (the token request shares one).
        XCTAssertLessThanOrEqual(stats["connections_opened"]?.intValue ?? 99, 2)
        XCTAssertNotNil(stats["protocols"]?["h2"]?.intValue, "\(stats)")
        XCTAssertEqual(sender.stats().requestsInFlight, 0)
    }

    func testTokenEndpointRefusalFailsTheSendAndIsReportedForReady() async throws {
        let stranger = try ServiceAccountFixture()  // a key the stand-in does not know
        defer { stranger.remove() }
        let account = try ServiceAccount(json: stranger.json(["token_uri": .string(mock.tokenURI)]))
        let sender = try oneConnectionSender(account: account)
        let result = await sender.send(FCMRequest(token: "device", message: try template()))
        guard case .failure(.accessToken(.rejected(status: 400, error: "invalid_grant", _))) = result else {
            return XCTFail("\(result)")
        }
        let problem = try XCTUnwrap(sender.authProblem)
        XCTAssertEqual(problem.kind, .accessTokenRefused)
        XCTAssertEqual(problem.count, 1)
        XCTAssertTrue(problem.detail.contains("invalid_grant"), problem.detail)
        XCTAssertEqual(try stat("sends"), 0, "nothing is sent without a token")
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testTokenRefusalSwitchedOnFailsEverySendWithoutRetryingTheEndpointThenClearsOnceFixed() async throws {
        let sender = try oneConnectionSender(
            tokenPolicy: AccessTokenPolicy(initialBackoff: 0.05, maxBackoff: 0.1, configurationBackoff: 1))
        try mock.configure(["token_refusal": .string("invalid_grant")])
        let message = try template()
        for token in ["a", "b", "c"] {
            let result = await sender.send(FCMRequest(token: token, message: message))
            guard case .failure(.accessToken(.rejected(status: 400, error: "invalid_grant", _))) = result else {
                return XCTFail("\(token): \(result)")
            }
        }
        XCTAssertEqual(try stat("token_requests"), 1, "a refusal backs off: the next sends fail without asking again")
        XCTAssertEqual(sender.authProblem?.kind, .accessTokenRefused)
        XCTAssertEqual(sender.stats().accessTokenFailures, 3)
        XCTAssertNil(sender.stats().accessTokenAge, "no token yet")

        try mock.configure(["token_refusal": .string("")])
        try await Task.sleep(for: .milliseconds(1100))  // past the configuration backoff (a real deadline)
        guard case .response(.sent, _) = await sender.send(FCMRequest(token: "d", message: message)) else {
            return XCTFail("send after the fix")
        }
        XCTAssertNil(sender.authProblem, "a fresh token ends the problem")
        let stats = sender.stats()
        XCTAssertEqual(stats.tokenFetches, 1)
        XCTAssertLessThan(try XCTUnwrap(stats.accessTokenAge), 60)
        XCTAssertGreaterThan(try XCTUnwrap(stats.accessTokenExpiresIn), 3000)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testTokenEndpointUnavailableIsRetriedAndTheMessageStillSent() async throws {
        let sender = try oneConnectionSender(
            retry: FCMRetryPolicy(maxAttempts: 4, initialDelay: 0.05, maxDelay: 1, quotaDelay: 0, maxTotalDelay: 30),
            tokenPolicy: AccessTokenPolicy(initialBackoff: 0.05, maxBackoff: 0.2))
        try mock.configure(["token_unavailable": .int(2)])
        let result = await sender.send(FCMRequest(token: "patient", message: try template()))
        guard case .response(.sent, attempts: 1) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try stat("token_requests"), 3, "two 503s, then a token")
        XCTAssertEqual(try mock.requests(token: "patient").count, 1)
        XCTAssertNil(sender.authProblem, "an unavailable endpoint is not a credential problem")
        // At least one wait per 503 (a retry that lands inside the token fetch's own backoff waits once more).
        XCTAssertGreaterThanOrEqual(sender.stats().retries, 2)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testTokenEndpointUnavailableThroughEveryRetryFailsTheMessage() async throws {
        let sender = try oneConnectionSender(
            retry: FCMRetryPolicy(maxAttempts: 3, initialDelay: 0.05, maxDelay: 1, quotaDelay: 0, maxTotalDelay: 30),
            tokenPolicy: AccessTokenPolicy(initialBackoff: 0.01, maxBackoff: 0.02))
        try mock.configure(["token_unavailable": .int(100)])
        let result = await sender.send(FCMRequest(token: "unlucky", message: try template()))
        guard case .failure(.accessToken(.unavailable(status: 503))) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try stat("sends"), 0)
        XCTAssertEqual(sender.stats().accessTokenFailures, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testPermissionDeniedIsReportedKeepsTheTokenAndClearsOnTheNextAcceptedMessage() async throws {
        let sender = try makeSender()
        let message = try template()
        for token in ["denied-1", "denied-2"] {
            let result = await sender.send(FCMRequest(token: token, message: message))
            guard case .response(.authError(let info), attempts: 1) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(info.status, "PERMISSION_DENIED")
        }
        let problem = try XCTUnwrap(sender.authProblem)
        XCTAssertEqual(problem.kind, .permissionDenied)
        XCTAssertEqual(problem.count, 2)
        XCTAssertTrue(problem.detail.hasPrefix("403 PERMISSION_DENIED"), problem.detail)
        XCTAssertEqual(sender.stats().invalidTokens, 0, "an auth answer says nothing about the device")
        XCTAssertEqual(try mock.requests(token: "denied-1").count, 1, "not retried")
        guard case .response(.sent, _) = await sender.send(FCMRequest(token: "ok", message: message)) else {
            return XCTFail("accepted send")
        }
        XCTAssertNil(sender.authProblem)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testSenderIDMismatchBeforeAnyAcceptedMessageKeepsTheDeviceAndIsReported() async throws {
        let sender = try makeSender()
        let message = try template()
        let first = await sender.send(FCMRequest(token: "mismatch-1", message: message))
        guard case .response(.authError(let info), attempts: 1) = first else { return XCTFail("\(first)") }
        XCTAssertEqual(info.errorCode, "SENDER_ID_MISMATCH")
        XCTAssertEqual(sender.authProblem?.kind, .senderIDMismatch)
        XCTAssertEqual(sender.stats().invalidTokens, 0)
        guard case .response(.sent, _) = await sender.send(FCMRequest(token: "ok", message: message)) else {
            return XCTFail("accepted send")
        }
        let second = await sender.send(FCMRequest(token: "mismatch-2", message: message))
        guard case .response(.senderMismatch, _) = second else { return XCTFail("\(second)") }
        XCTAssertNil(sender.authProblem, "after an accepted message a mismatch is one dead token")
        XCTAssertEqual(sender.stats().invalidTokens, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testProjectIDOverrideIsTheProjectInTheSendPath() async throws {
        let other = try MockFCM.start(
            serviceAccountFile: directory + "/service-account.json",
            extraArguments: ["--project", "other-project-42"])
        defer { other.stop() }
        let account = try ServiceAccount(json: fixture.json(["token_uri": .string(other.tokenURI)]))
        XCTAssertNotEqual(account.projectID, "other-project-42")
        let message = try template()

        let plain = try FCMSender(
            account: account,
            configuration: FCMSenderConfiguration(
                baseURL: other.baseURL, caFile: other.caFile, connections: 1, streamsPerConnection: 10))
        let wrong = await plain.send(FCMRequest(token: "device", message: message))
        guard case .response(.configuration(let info), attempts: 1) = wrong else { return XCTFail("\(wrong)") }
        XCTAssertEqual(info.httpStatus, 404)
        XCTAssertEqual(plain.authProblem?.kind, .projectNotFound)
        _ = await plain.shutdown(gracePeriod: .seconds(1))

        let overridden = try FCMSender(
            account: account,
            configuration: FCMSenderConfiguration(
                baseURL: other.baseURL, projectID: "other-project-42", caFile: other.caFile, connections: 1,
                streamsPerConnection: 10))
        XCTAssertEqual(overridden.projectID, "other-project-42")
        let result = await overridden.send(FCMRequest(token: "device", message: message))
        guard case .response(.sent(let name), _) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(name.hasPrefix("projects/other-project-42/messages/"), name)
        let paths = try other.requests().map { $0["project"]?.stringValue }
        XCTAssertEqual(paths, [account.projectID, "other-project-42"])
        _ = await overridden.shutdown(gracePeriod: .seconds(1))
    }

    func testProjectIDOverrideWithBytesOutsideAProjectIDIsRefused() throws {
        for bad in ["Other", "a/b", "p?x=1", "", "a b"] {
            XCTAssertThrowsError(
                try FCMSender(
                    account: account(),
                    configuration: FCMSenderConfiguration(
                        baseURL: mock.baseURL, projectID: bad, caFile: mock.caFile))
            ) { error in
                XCTAssertEqual(error as? FCMSenderError, .invalidProjectID(bad))
            }
        }
    }

    func testCancellingTheRunEndsAWaitingRetryAtOnceAndItIsNeverSent() async throws {
        // Without Retry-After a quota answer waits a minute; the cancel must not wait for it.
        let sender = try makeSender(
            retry: FCMRetryPolicy(maxAttempts: 3, initialDelay: 1, maxDelay: 120, quotaDelay: 60))
        try mock.configure(["retry_after_s": .int(-1)])
        let scope = RetryScope()
        let result = Locked<FCMResult?>(nil)
        await sender.submit(FCMRequest(token: "quota-cancel", message: try template(), retries: scope)) { answer in
            result.withLock { $0 = answer }
        }
        try await eventually("the retry waits") { scope.waitingCount > 0 }
        XCTAssertEqual(scope.waitingCount, 1, "the 429 arrived and its retry waits")
        scope.cancel()
        XCTAssertEqual(result.withLock { $0 }, .failure(.cancelled(attempts: 1)), "reported by the cancel itself")
        XCTAssertEqual(sender.stats().requestsInFlight, 0, "its window slot is free")
        XCTAssertEqual(sender.stats().cancelled, 1)
        XCTAssertEqual(try mock.requests(token: "quota-cancel").count, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testARetryThatWouldGoOutAfterTheDeadlineIsNotScheduled() async throws {
        let sender = try makeSender(
            retry: FCMRetryPolicy(maxAttempts: 3, initialDelay: 1, maxDelay: 120, quotaDelay: 60))
        try mock.configure(["retry_after_s": .int(5)])
        let deadline = RetryDeadline(expiresAt: nil, timeToLive: 3, from: Date())
        let started = Date()
        let result = await sender.send(FCMRequest(token: "quota-ttl", message: try template(), deadline: deadline))
        XCTAssertEqual(result, .failure(.expired(attempts: 1)))
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "ended at the answer, not at the deadline or later")
        XCTAssertEqual(try mock.requests(token: "quota-ttl").count, 1)
        XCTAssertEqual(sender.stats().expired, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testShutdownReturnsARequestWaitingForItsRetry() async throws {
        // QUOTA_EXCEEDED waits at least a minute (Firebase's advice): the request is still pending at shutdown.
        let sender = try makeSender(
            retry: FCMRetryPolicy(maxAttempts: 3, initialDelay: 1, maxDelay: 120, quotaDelay: 60))
        let request = FCMRequest(token: "quota-1", message: try template())
        let result = Locked<FCMResult?>(nil)
        await sender.submit(request) { answer in result.withLock { $0 = answer } }
        // Whether or not the 429 arrived within the grace period, the request is unfinished: sent and unanswered,
        // or waiting a minute for its retry.
        let unanswered = await sender.shutdown(gracePeriod: .seconds(0.2))
        XCTAssertEqual(unanswered, [request])
        XCTAssertEqual(result.withLock { $0 }, .failure(.shutdown))
        await sender.submit(request) { answer in result.withLock { $0 = answer } }
        XCTAssertEqual(result.withLock { $0 }, .failure(.shutdown), "refused after shutdown")
    }
}
