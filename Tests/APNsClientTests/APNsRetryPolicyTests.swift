import APNsClient
import XCTest

final class APNsRetryPolicyTests: XCTestCase {
    private let policy = APNsRetryPolicy(maxAttempts: 4, baseDelay: 0.5, maxDelay: 4, maxTotalDelay: 10, jitter: 0.5)

    private func decide(
        _ outcome: APNsRetryPolicy.Outcome, attempts: Int = 1, elapsed: Double = 0,
        tokenRefreshed: Bool = false, random: Double = 0
    ) -> APNsRetryPolicy.Decision {
        policy.decide(outcome, attempts: attempts, elapsed: elapsed, tokenRefreshed: tokenRefreshed, random: random)
    }

    func testNeverRetriesApplesNeverRetryListOrOtherRequestErrors() {
        let final: [(Int, APNsReason)] = [
            (400, .badDeviceToken), (400, .deviceTokenNotForTopic), (403, .forbidden), (410, .expiredToken),
            (410, .unregistered), (413, .payloadTooLarge), (400, .badTopic), (400, .badCollapseId),
            (404, .badPath), (405, .methodNotAllowed), (400, .unknown("BadPayload")),
        ]
        for (status, reason) in final {
            XCTAssertEqual(decide(.response(status: status, reason: reason)), .finish, reason.rawValue)
        }
        XCTAssertEqual(decide(.response(status: 200, reason: nil)), .finish)
    }

    func testRetriesTooManyRequestsAndServerErrorsWithGrowingBackoff() {
        XCTAssertEqual(decide(.response(status: 500, reason: .internalServerError)), .retry(after: 0.5))
        XCTAssertEqual(decide(.response(status: 503, reason: .serviceUnavailable), attempts: 2), .retry(after: 1))
        XCTAssertEqual(decide(.response(status: 503, reason: .shutdown), attempts: 3), .retry(after: 2))
        // 429 waits at least tooManyRequestsDelay (1 s).
        XCTAssertEqual(decide(.response(status: 429, reason: .tooManyRequests)), .retry(after: 1))
        XCTAssertEqual(decide(.response(status: 429, reason: .tooManyRequests), attempts: 3), .retry(after: 2))
    }

    func testBackoffIsBoundedByAttemptsAndTotalTime() {
        XCTAssertEqual(decide(.response(status: 503, reason: .serviceUnavailable), attempts: 4), .finish)
        XCTAssertEqual(decide(.response(status: 503, reason: .serviceUnavailable), attempts: 3, elapsed: 8.5), .finish)
        XCTAssertEqual(decide(.transport(.connection), attempts: 4), .finish)
        XCTAssertEqual(policy.delay(attempts: 30, random: 0), 4)  // capped
    }

    func testJitterShortensDelayWithinItsShare() {
        XCTAssertEqual(policy.delay(attempts: 2, random: 0), 1)
        XCTAssertEqual(policy.delay(attempts: 2, random: 1), 0.5)
        XCTAssertEqual(policy.delay(attempts: 2, random: 0.5), 0.75)
    }

    func testConnectionLossIsResentAtOnceThenBacksOff() {
        XCTAssertEqual(decide(.transport(.connection)), .retry(after: 0))
        XCTAssertEqual(decide(.transport(.connection), attempts: 2), .retry(after: 0.5))
        XCTAssertEqual(decide(.transport(.timeout)), .retry(after: 0.5))
        XCTAssertEqual(decide(.transport(.fatal)), .finish)
        var noTimeouts = policy
        noTimeouts.retryTimeouts = false
        XCTAssertEqual(
            noTimeouts.decide(.transport(.timeout), attempts: 1, elapsed: 0, tokenRefreshed: false, random: 0),
            .finish)
    }

    func testExpiredProviderTokenRefreshesOnceThenIsAConfigurationFault() {
        XCTAssertEqual(decide(.response(status: 403, reason: .expiredProviderToken)), .refreshTokenAndRetry)
        XCTAssertEqual(
            decide(.response(status: 403, reason: .expiredProviderToken), attempts: 2, tokenRefreshed: true),
            .configurationFault)
    }

    func testCredentialRejectionsAreConfigurationFaultsNeverLoops() {
        for reason: APNsReason in [
            .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyIdInToken,
            .unrelatedKeyIdInToken, .badCertificate, .badCertificateEnvironment,
        ] {
            XCTAssertEqual(decide(.response(status: 403, reason: reason)), .configurationFault, reason.rawValue)
        }
    }

    func testTooManyProviderTokenUpdatesWaitsWithBackoffWithinItsWindowNotCountingAttempts() {
        let rejected = APNsRetryPolicy.Outcome.response(status: 429, reason: .tooManyProviderTokenUpdates)
        func decide(rejections: Int, elapsed: Double) -> APNsRetryPolicy.Decision {
            // attempts stays 1: rejected attempts are not counted against maxAttempts (4 here).
            policy.decide(
                rejected, attempts: 1, elapsed: elapsed, tokenRefreshed: false, random: 0,
                tokenUpdateRejections: rejections)
        }
        XCTAssertEqual(decide(rejections: 1, elapsed: 0), .retryAfterTokenUpdateRejected(after: 1), "at least 1 s")
        XCTAssertEqual(decide(rejections: 3, elapsed: 5), .retryAfterTokenUpdateRejected(after: 2))
        XCTAssertEqual(decide(rejections: 40, elapsed: 600), .retryAfterTokenUpdateRejected(after: 4), "capped")
        // 25 minutes after the first send the 20-minute floor has long passed: something else is wrong.
        XCTAssertEqual(decide(rejections: 200, elapsed: 25 * 60 - 3), .configurationFault)
    }
}
