import APNsClient
import Foundation
import PublishEngine
import PushStore
import XCTest

/// What an APNs answer does to a Live Activity token (the plan itself is in BeamsModelTests' LiveActivityPlanTests).
final class LiveActivityOutcomeTests: XCTestCase {
    private let stored = Date(timeIntervalSince1970: 1_700_000_000)
    private let now = Date(timeIntervalSince1970: 1_700_001_000)

    private func outcome(_ response: APNsResponse) -> DeliveryOutcome {
        let target = Target(
            ref: 42, deviceID: "apns-x", platform: .apns, token: "ab", environment: .sandbox,
            environmentDeclared: true, lastRegisteredAt: stored, userID: nil)
        return DeliveryOutcome.classify(
            .response(response), target: target, environment: .sandbox,
            isEnvironmentRetry: false, now: now
        ).forLiveActivityToken()
    }

    func testUnregisteredRemovesTheTokenNotTheDevice() throws {
        let since = stored.addingTimeInterval(10)
        guard
            case .final(let counters, let result) = outcome(
                APNsResponse(status: 410, reason: .unregistered, timestamp: since))
        else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters, [.failed(.apns, reason: "Unregistered"): 1, .liveActivityTokensRemoved: 1])
        XCTAssertEqual(result.liveActivityTokenDeath, LiveActivityTokenDeath(ref: 42, since: since))
    }

    func testBadDeviceTokenRemovesTheToken() throws {
        guard case .final(let counters, let result) = outcome(APNsResponse(status: 400, reason: .badDeviceToken)) else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters, [.failed(.apns, reason: "BadDeviceToken"): 1, .liveActivityTokensRemoved: 1])
        XCTAssertEqual(result.liveActivityTokenDeath, LiveActivityTokenDeath(ref: 42, since: now))
    }

    func testDeviceTokenNotForTopicKeepsTheToken() throws {
        guard
            case .final(let counters, let result) = outcome(APNsResponse(status: 400, reason: .deviceTokenNotForTopic))
        else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters, [.failed(.apns, reason: "DeviceTokenNotForTopic"): 1])
        XCTAssertNil(result.liveActivityTokenDeath)
        XCTAssertEqual(result.effect, .none)
    }

    func testAcceptedChangesNothing() throws {
        guard case .final(let counters, let result) = outcome(APNsResponse(status: 200)) else {
            return XCTFail("expected a final outcome")
        }
        XCTAssertEqual(counters, [.accepted(.apns): 1])
        XCTAssertNil(result.liveActivityTokenDeath)
    }
}
