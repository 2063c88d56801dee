import Foundation
import PushStore
import XCTest

/// What an import decides per record, from what the store holds: keyed by (platform, token), ids kept, user
/// bindings never replaced, caps checked against running counts.
final class DeviceImportPlannerTests: XCTestCase {
    let instance = "i1"
    let planner = DeviceImportPlanner(
        caps: DeviceImportCaps(
            maxDevicesPerInstance: 4, maxDevicesPerUser: 1,
            interests: InterestLimits(maxSubscriptionsPerInstance: 4, maxInterestsPerInstance: 3)),
        makeID: { "\($0.rawValue)-fresh" })

    func record(
        _ token: String, id: String = "", user: String? = nil, interests: [String] = [],
        created: Int64 = 1000
    ) -> DeviceRecord {
        DeviceRecord(
            device: Device(
                id: id, instanceID: "elsewhere", platform: .fcm, token: token, environment: .production,
                environmentDeclared: false, bundleID: nil, metadata: "{}", userID: user,
                createdAt: Date(millisecondsSince1970: created), lastRegisteredAt: Date(millisecondsSince1970: created),
                lastResult: nil, invalidatedAt: nil), interests: interests)
    }

    func stored(_ record: DeviceRecord, ref: Int64) -> (ref: Int64, record: DeviceRecord) {
        var record = record
        record.device.instanceID = instance
        return (ref, record)
    }

    func testSameDataIsUnchangedOtherDataUpdatesAndKeepsTheStoredID() {
        var facts = DeviceImportPlanner.Facts()
        let existing = record("t1", id: "fcm-stored", interests: ["a"])
        facts.existing[existing.key] = stored(existing, ref: 7)
        facts.devices = 1
        facts.subscriptions = 1
        facts.interests = 1
        facts.knownInterests = ["a"]
        let steps = planner.plan([record("t1", id: "fcm-other", interests: ["a"])], into: instance, facts: facts)
        XCTAssertEqual(steps, [.unchanged], "the file's id does not make a known device different")
        let changed = planner.plan([record("t1", interests: ["a", "b"], created: 5)], into: instance, facts: facts)
        guard case .update(let ref, let written, let interestsChanged, let tokensChanged)? = changed.first else {
            return XCTFail("\(changed)")
        }
        XCTAssertEqual(ref, 7)
        XCTAssertEqual(written.device.id, "fcm-stored")
        XCTAssertEqual(written.device.instanceID, instance)
        XCTAssertTrue(interestsChanged)
        XCTAssertFalse(tokensChanged)
    }

    func testOmittedTimesKeepTheStoredOnes() {
        var facts = DeviceImportPlanner.Facts()
        let existing = record("t1", id: "fcm-stored", created: 1000)
        facts.existing[existing.key] = stored(existing, ref: 7)
        var again = record("t1", created: 99_999)
        again.omittedTimes = [.createdAt, .lastRegisteredAt]
        XCTAssertEqual(planner.plan([again], into: instance, facts: facts), [.unchanged])
    }

    func testNewDevicesKeepTheirIDUnlessTakenOrMissing() {
        var facts = DeviceImportPlanner.Facts()
        facts.takenIDs = ["fcm-taken"]
        let steps = planner.plan(
            [record("t1", id: "fcm-free"), record("t2", id: "fcm-taken"), record("t3")],
            into: instance, facts: facts)
        XCTAssertEqual(
            steps.map { step -> String in
                if case .create(let record) = step { return record.device.id }
                return "\(step)"
            }, ["fcm-free", "fcm-fresh", "fcm-fresh"])
    }

    func testAnExistingUserBindingIsNeverReplacedNorDropped() {
        var facts = DeviceImportPlanner.Facts()
        let existing = record("t1", id: "fcm-stored", user: "alice")
        facts.existing[existing.key] = stored(existing, ref: 7)
        facts.userDevices = ["alice": 1]
        XCTAssertEqual(
            planner.plan([record("t1", user: "bob")], into: instance, facts: facts),
            [.refused("the device is bound to another user")])
        XCTAssertEqual(
            planner.plan([record("t1")], into: instance, facts: facts), [.unchanged],
            "a line without a user keeps the binding")
    }

    func testCapsRefuseTheRecordsPastThemAndLetTheRestIn() {
        var facts = DeviceImportPlanner.Facts()
        facts.devices = 1
        facts.userDevices = ["alice": 0]
        let steps = planner.plan(
            [
                record("t1", user: "alice"),
                record("t2", user: "alice"),  // alice's second device: over maxDevicesPerUser 1
                record("t3", interests: ["a", "b", "c"]),
                record("t4", interests: ["d"]),  // a 4th distinct name: over maxInterestsPerInstance 3
                record("t5", interests: ["a", "b"]),  // 5 subscriptions: over maxSubscriptionsPerInstance 4
                record("t6"),  // the 4th device
                record("t7"),  // the 5th: over maxDevicesPerInstance 4
                record("t1"),  // the same key again in the batch
            ], into: instance, facts: facts)
        XCTAssertEqual(
            steps.map(\.outcome),
            [
                .created,
                .refused("the user has maxDevicesPerUser (1) devices"),
                .created,
                .refused("the instance has maxInterestsPerInstance interests"),
                .refused("the instance has maxSubscriptionsPerInstance subscriptions"),
                .created,
                .refused("the instance has maxDevicesPerInstance (4) devices"),
                .refused("the same platform and token as an earlier line of this batch"),
            ])
    }
}
