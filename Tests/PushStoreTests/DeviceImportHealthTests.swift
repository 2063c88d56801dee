import Foundation
import PushStore
import XCTest

/// A record whose source knows nothing of deliveries (another provider's export: no `lastResult` and no
/// `invalidatedAt` in its line) keeps a known device's health, so importing the provider's file again neither
/// counts a device that was sent to as updated nor revives one invalidated here.
final class DeviceImportHealthTests: XCTestCase {
    let instance = "i1"
    let planner = DeviceImportPlanner(
        caps: DeviceImportCaps(
            maxDevicesPerInstance: 10, maxDevicesPerUser: 10,
            interests: InterestLimits(maxSubscriptionsPerInstance: 10, maxInterestsPerInstance: 10)),
        makeID: { "\($0.rawValue)-fresh" })

    func record(result: DeliveryResult?, invalidatedAt: Date?) -> DeviceRecord {
        DeviceRecord(
            device: Device(
                id: "fcm-stored", instanceID: instance, platform: .fcm, token: "t1", environment: .production,
                environmentDeclared: false, bundleID: nil, metadata: "{}", userID: nil,
                createdAt: Date(millisecondsSince1970: 1000), lastRegisteredAt: Date(millisecondsSince1970: 1000),
                lastResult: result, invalidatedAt: invalidatedAt), interests: ["a"])
    }

    func testARecordWithoutHealthKeepsTheStoredHealthOfAnInvalidatedDevice() {
        let died = Date(millisecondsSince1970: 5000)
        let existing = record(
            result: DeliveryResult(status: 404, reason: "UNREGISTERED", at: died), invalidatedAt: died)
        var facts = DeviceImportPlanner.Facts()
        facts.existing[existing.key] = (7, existing)
        facts.devices = 1
        facts.subscriptions = 1
        facts.interests = 1
        facts.knownInterests = ["a"]
        var again = record(result: nil, invalidatedAt: nil)
        again.omittedTimes = [.health]
        XCTAssertEqual(planner.plan([again], into: instance, facts: facts), [.unchanged])
        again.interests = ["a", "b"]
        guard case .update(_, let written, _, _)? = planner.plan([again], into: instance, facts: facts).first else {
            return XCTFail("not an update")
        }
        XCTAssertEqual(written.device.invalidatedAt, died, "an update of other data does not revive the device")
        XCTAssertEqual(written.device.lastResult?.status, 404)
        again.omittedTimes = []
        guard case .update(_, let cleared, _, _)? = planner.plan([again], into: instance, facts: facts).first else {
            return XCTFail("not an update")
        }
        XCTAssertNil(cleared.device.invalidatedAt, "a line that gives its health (null) still sets it")
    }
}
