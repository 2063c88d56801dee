import BeamsModel
import FCMClient
import Foundation
import HTTPClient
import Observability
import PublishEngine
import PushStore
import WebPush
import XCTest

/// FCM and Web Push results → publish counters and device effects, without sockets.
final class DeliveryOutcomePlatformTests: XCTestCase {
    private let target = Target(
        ref: 7, deviceID: "d", platform: .fcm, token: "t", environment: .production,
        environmentDeclared: true, lastRegisteredAt: Date(timeIntervalSince1970: 0), userID: nil)
    private let now = Date(timeIntervalSince1970: 1000)

    private func info(_ status: Int, _ code: String?, canonical: String? = nil) -> FCMErrorInfo {
        FCMErrorInfo(httpStatus: status, status: canonical, errorCode: code, message: "m")
    }

    private func final(_ outcome: DeliveryOutcome, file: StaticString = #filePath, line: UInt = #line)
        -> (counters: PublishCounters, device: DeviceResult)?
    {
        guard case .final(let counters, let device) = outcome else {
            XCTFail("not final: \(outcome)", file: file, line: line)
            return nil
        }
        return (counters, device)
    }

    func testFCMDeadTokensInvalidateTheDeviceAndCountPerPlatform() throws {
        for result in [
            FCMSendResult.invalidToken(info(404, "UNREGISTERED")), .senderMismatch(info(403, "SENDER_ID_MISMATCH")),
        ] {
            let (counters, device) = try XCTUnwrap(
                final(.classify(FCMResult.response(result, attempts: 1), target: target, now: now)))
            XCTAssertEqual(device.effect, .badToken)
            XCTAssertEqual(counters[.devicesRemoved], 1)
            XCTAssertEqual(counters[.devicesRemovedOn(.fcm)], 1)
            XCTAssertEqual(counters.failures(on: .fcm).count, 1)
        }
    }

    func testFCMAuthConfigurationAndExhaustedRetriesKeepTheDevice() throws {
        let cases: [(FCMResult, String)] = [
            (.response(.authError(info(401, "THIRD_PARTY_AUTH_ERROR")), attempts: 1), "THIRD_PARTY_AUTH_ERROR"),
            (.response(.configuration(info(404, nil, canonical: "NOT_FOUND")), attempts: 1), "NOT_FOUND"),
            (.response(.retry(info(429, "QUOTA_EXCEEDED"), retryAfter: 5), attempts: 4), "QUOTA_EXCEEDED"),
            (.response(.invalidMessage(info(400, "INVALID_ARGUMENT")), attempts: 1), "INVALID_ARGUMENT"),
            (.response(.retry(info(500, "SOMETHING_NEW"), retryAfter: nil), attempts: 4), "UnknownError"),
            (.response(.unknown("odd"), attempts: 1), "UnknownError"),
            (.failure(.transport(HTTPExchangeError(.timeout, "t"), attempts: 3)), "TransportError"),
            (.failure(.accessToken(.unavailable(status: 503))), "AccessTokenUnavailable"),
            (.failure(.accessToken(.transport("refused"))), "AccessTokenUnavailable"),
            (
                .failure(
                    .accessToken(.rejected(status: 400, error: "invalid_grant", description: "Invalid JWT Signature."))),
                "AccessTokenRefused"
            ),
            (.response(.authError(info(403, nil, canonical: "PERMISSION_DENIED")), attempts: 1), "PERMISSION_DENIED"),
            (.response(.authError(info(403, "SENDER_ID_MISMATCH")), attempts: 1), "SENDER_ID_MISMATCH"),
            (
                .response(.accessTokenRejected(info(401, nil, canonical: "UNAUTHENTICATED")), attempts: 2),
                "UNAUTHENTICATED"
            ),
        ]
        for (result, reason) in cases {
            let (counters, device) = try XCTUnwrap(final(.classify(result, target: target, now: now)))
            XCTAssertEqual(device.effect, DeviceEffect.none, reason)
            XCTAssertEqual(device.reason, reason)
            XCTAssertEqual(counters, [.failed(.fcm, reason: reason): 1])
            XCTAssertTrue(MetricLabel.reasons.contains(reason), reason)
        }
        XCTAssertEqual(DeliveryOutcome.classify(FCMResult.failure(.shutdown), target: target, now: now), .unfinished)
    }

    func testRetriesEndedByACancelOrTheDeadlineAreFinalWithTheirReasonAndKeepTheDevice() throws {
        let cases: [(DeliveryOutcome, Platform, String)] = [
            (.classify(FCMResult.failure(.cancelled(attempts: 1)), target: target, now: now), .fcm, "Cancelled"),
            (.classify(FCMResult.failure(.expired(attempts: 2)), target: target, now: now), .fcm, "Expired"),
            (.classify(WebPushResult.failure(.cancelled(attempts: 0)), target: target, now: now), .web, "Cancelled"),
            (.classify(WebPushResult.failure(.expired(attempts: 1)), target: target, now: now), .web, "Expired"),
        ]
        for (outcome, platform, reason) in cases {
            let (counters, device) = try XCTUnwrap(final(outcome))
            XCTAssertEqual(device.reason, reason)
            XCTAssertEqual(device.effect, DeviceEffect.none, reason)
            XCTAssertEqual(counters, [.failed(platform, reason: reason): 1])
            XCTAssertTrue(MetricLabel.reasons.contains(reason), reason)
        }
    }

    func testWebGoneSubscriptionsInvalidateAndOtherAnswersKeepTheDevice() throws {
        for status in [404, 410] {
            let (counters, device) = try XCTUnwrap(
                final(
                    .classify(
                        WebPushResult.response(.subscriptionGone(status: status), attempts: 1),
                        target: target, now: now)))
            XCTAssertEqual(device.effect, .badToken)
            XCTAssertEqual(device.status, status)
            XCTAssertEqual(counters[.failed(.web, reason: "SubscriptionGone")], 1)
            XCTAssertEqual(counters[.devicesRemovedOn(.web)], 1)
        }
        let cases: [(WebPushResult, String)] = [
            (.response(.payloadTooLarge, attempts: 1), "PayloadTooLarge"),
            (.response(.configurationError(status: 403, detail: "bad jwt"), attempts: 1), "VAPIDRejected"),
            (.response(.configurationError(status: 400, detail: ""), attempts: 1), "BadRequest"),
            (.response(.retry(status: 429, after: 9), attempts: 4), "TooManyRequests"),
            (.response(.retry(status: 503, after: nil), attempts: 4), "PushServiceUnavailable"),
            (.failure(.hostNotAllowed("evil.example")), "DestinationRefused"),
            (
                .failure(.transport(HTTPExchangeError(.refusedDestination, "10.0.0.1"), attempts: 1)),
                "DestinationRefused"
            ),
            (.failure(.transport(HTTPExchangeError(.connection, "reset"), attempts: 3)), "TransportError"),
        ]
        for (result, reason) in cases {
            let (counters, device) = try XCTUnwrap(final(.classify(result, target: target, now: now)))
            XCTAssertEqual(device.effect, DeviceEffect.none, reason)
            XCTAssertEqual(counters, [.failed(.web, reason: reason): 1])
            XCTAssertTrue(MetricLabel.reasons.contains(reason), reason)
        }
        let (accepted, device) = try XCTUnwrap(
            final(
                .classify(
                    WebPushResult.response(.accepted(status: 201), attempts: 1),
                    target: target, now: now)))
        XCTAssertEqual(accepted, [.accepted(.web): 1])
        XCTAssertTrue(device.isAccepted)
        XCTAssertEqual(
            DeliveryOutcome.classify(WebPushResult.failure(.shutdown), target: target, now: now), .unfinished)
    }

    func testAnHMSResultCodeOnHTTP200IsAFailureForTheChartAndTheUserNotAnAcceptance() throws {
        for delivery in [HMSDelivery.invalidToken(reason: "80100000"), .failed(reason: "80300002", status: 200)] {
            let (counters, device) = try XCTUnwrap(
                final(DeliveryOutcome(HMSDispatch.verdict(delivery), on: .hms, target: target, now: now)))
            XCTAssertEqual(device.status, 200)
            XCTAssertFalse(device.isAccepted, "\(delivery)")
            XCTAssertNil(counters[.accepted(.hms)])
        }
        let (_, accepted) = try XCTUnwrap(
            final(DeliveryOutcome(HMSDispatch.verdict(.accepted), on: .hms, target: target, now: now)))
        XCTAssertTrue(accepted.isAccepted)
    }
}
