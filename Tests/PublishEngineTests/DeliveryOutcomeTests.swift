import APNsClient
import Observability
import PublishEngine
import PushStore
import XCTest

final class DeliveryOutcomeTests: XCTestCase {
    private let registered = Date(timeIntervalSince1970: 1_700_000_000)
    private let now = Date(timeIntervalSince1970: 1_700_001_000)

    private func target(declared: Bool = true) -> Target {
        Target(
            ref: 7, deviceID: "apns-x", platform: .apns, token: "ab", environment: .sandbox,
            environmentDeclared: declared, lastRegisteredAt: registered, userID: nil)
    }

    private func classify(_ response: APNsResponse, declared: Bool = true, retry: Bool = false) -> DeliveryOutcome {
        DeliveryOutcome.classify(
            .response(response), target: target(declared: declared), environment: .sandbox,
            isEnvironmentRetry: retry, now: now)
    }

    func testAcceptedCountsAndRecordsTheResult() {
        XCTAssertEqual(
            classify(APNsResponse(status: 200)),
            .final(
                counters: [.accepted(.apns): 1], device: DeviceResult(device: 7, status: 200, reason: nil, at: now)))
    }

    func testUnregisteredAfterLastRegistrationRemovesTheDevice() {
        let later = registered.addingTimeInterval(10)
        XCTAssertEqual(
            classify(APNsResponse(status: 410, reason: .unregistered, timestamp: later)),
            .final(
                counters: [.failed(.apns, reason: "Unregistered"): 1, .devicesRemoved: 1],
                device: DeviceResult(
                    device: 7, status: 410, reason: "Unregistered", at: now, effect: .unregistered(since: later))))
    }

    func testUnregisteredBeforeLastRegistrationKeepsTheDevice() {
        let earlier = registered.addingTimeInterval(-10)
        guard
            case .final(let counters, let device) = classify(
                APNsResponse(status: 410, reason: .unregistered, timestamp: earlier))
        else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertNil(counters[.devicesRemoved], "the app registered the token again after APNs' timestamp")
        XCTAssertEqual(device.effect, .unregistered(since: earlier), "the store applies the same rule")
    }

    func testBadDeviceTokenOnDefaultedEnvironmentRetriesTheOtherOnce() {
        XCTAssertEqual(
            classify(APNsResponse(status: 400, reason: .badDeviceToken), declared: false),
            .retryInEnvironment(.production))
        guard
            case .final(let counters, let device) = classify(
                APNsResponse(status: 400, reason: .badDeviceToken), declared: false, retry: true)
        else {
            return XCTFail("the retry's answer is final")
        }
        XCTAssertEqual(counters, [.failed(.apns, reason: "BadDeviceToken"): 1, .devicesRemoved: 1])
        XCTAssertEqual(device.effect, .badToken)
    }

    func testBadDeviceTokenOnDeclaredEnvironmentIsFinal() {
        guard case .final(_, let device) = classify(APNsResponse(status: 400, reason: .badDeviceToken), declared: true)
        else {
            return XCTFail("a declared environment is never second-guessed")
        }
        XCTAssertEqual(device.effect, .badToken)
    }

    func testSuccessfulEnvironmentRetryCorrectsTheDevice() {
        guard case .final(let counters, let device) = classify(APNsResponse(status: 200), declared: false, retry: true)
        else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters[.environmentCorrected], 1)
        XCTAssertEqual(device.effect, .environment(.sandbox))
    }

    func testShutdownIsNotAFinalResult() {
        XCTAssertEqual(
            DeliveryOutcome.classify(
                .failure(.shutdown), target: target(), environment: .sandbox,
                isEnvironmentRetry: false, now: now), .unfinished)
    }

    func testRetriesEndedByACancelOrTheDeadlineAreFinalAndKeepTheDevice() {
        for (failure, reason) in [
            (APNsFailure.cancelled(attempts: 1), "Cancelled"), (.expired(attempts: 2), "Expired"),
        ] {
            let outcome = DeliveryOutcome.classify(
                .failure(failure), target: target(), environment: .sandbox,
                isEnvironmentRetry: false, now: now)
            XCTAssertEqual(
                outcome,
                .final(
                    counters: [.failed(.apns, reason: reason): 1],
                    device: DeviceResult(device: 7, status: 0, reason: reason, at: now)))
            XCTAssertTrue(MetricLabel.reasons.contains(reason), reason)
        }
    }

    func testLocalRuleViolationsUseAppleStyleReasons() {
        let outcome = DeliveryOutcome.classify(
            .failure(.invalidRequest(.payloadTooLarge(bytes: 5000, limit: 4096))),
            target: target(), environment: .sandbox, isEnvironmentRetry: false, now: now)
        XCTAssertEqual(
            outcome,
            .final(
                counters: [.failed(.apns, reason: "PayloadTooLarge"): 1],
                device: DeviceResult(device: 7, status: 0, reason: "PayloadTooLarge", at: now)))
    }

    func testOtherStatusesAreCountedByReason() {
        guard case .final(let counters, _) = classify(APNsResponse(status: 503, reason: .serviceUnavailable)) else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters, [.failed(.apns, reason: "ServiceUnavailable"): 1])
    }
}
