import BeamsModel
import Foundation
import PushStore
import XCTest

@testable import PublishEngine

/// Intake's plans handed to the run on the same node: taken once, only for the bytes stored with the job, and
/// never more than the bounds allow (a miss only means the run parses the stored plan).
final class PlanHandoffTests: XCTestCase {
    private func plan(_ alert: String) throws -> PublishPlan {
        let body = Array(#"{"interests":["news"],"apns":{"aps":{"alert":"\#(alert)"}}}"#.utf8)
        return try PublishPlan(
            request: PublishRequest.parse(body, kind: .interests), body: body, instanceID: "i", publishID: "p-\(alert)")
    }

    private func job(_ publishID: String, payload: Data, notBefore: Date? = nil) -> PublishJob {
        PublishJob(
            instanceID: "i", publishID: publishID, kind: .interests, targets: ["news"], payload: payload,
            createdAt: Date(), notBefore: notBefore)
    }

    func testTakesTheKeptPlanOnceForTheBytesStoredWithItsJob() throws {
        let handoff = PlanHandoff()
        let plan = try plan("hi")
        let stored = job("p1", payload: plan.encoded())
        handoff.keep(plan, of: stored)
        XCTAssertEqual(handoff.take(for: stored), plan)
        XCTAssertEqual(try PublishPlan(decoding: stored.payload), plan, "the bytes decode to the plan handed over")
        XCTAssertNil(handoff.take(for: stored), "taken once")
    }

    func testRefusesAPlanKeptForOtherBytes() throws {
        let handoff = PlanHandoff()
        let plan = try plan("hi")
        handoff.keep(plan, of: job("p1", payload: plan.encoded()))
        XCTAssertNil(handoff.take(for: job("p1", payload: try self.plan("other").encoded())))
        XCTAssertEqual(handoff.count, 0)
    }

    func testKeepsNoScheduledPublish() throws {
        let handoff = PlanHandoff()
        let plan = try plan("hi")
        handoff.keep(plan, of: job("p1", payload: plan.encoded(), notBefore: Date().addingTimeInterval(3600)))
        XCTAssertEqual(handoff.count, 0)
    }

    func testKeepsNoMoreThanItsCapacityOrBytes() throws {
        let plan = try plan("hi")
        let payload = plan.encoded()
        let byCount = PlanHandoff(capacity: 2)
        // Full of young plans: the first ones stay, and the keeps that find no room queue no key either.
        for index in 0..<100 { byCount.keep(plan, of: job("p\(index)", payload: payload)) }
        XCTAssertEqual(byCount.count, 2)
        XCTAssertLessThanOrEqual(byCount.orderedKeys, 4)
        XCTAssertNil(byCount.take(for: job("p2", payload: payload)), "the ones over capacity were not kept")
        XCTAssertEqual(byCount.take(for: job("p0", payload: payload)), plan)
        XCTAssertEqual(byCount.take(for: job("p1", payload: payload)), plan)
        let byBytes = PlanHandoff(maxBytes: payload.count * 2 - 1)
        for index in 0..<2 { byBytes.keep(plan, of: job("p\(index)", payload: payload)) }
        XCTAssertEqual(byBytes.count, 1)
    }

    func testHoldsAtMostTwiceItsCapacityInKeysWhenEveryPlanIsTakenBehindAYoungOne() throws {
        let plan = try plan("hi")
        let payload = plan.encoded()
        let handoff = PlanHandoff(capacity: 4)
        // One plan nobody takes stays at the front of the age order (younger than a minute) while 1,000 others
        // are kept and taken behind it, as a job claimed on another node would leave it.
        handoff.keep(plan, of: job("stuck", payload: payload))
        for index in 0..<1000 {
            handoff.keep(plan, of: job("p\(index)", payload: payload))
            XCTAssertEqual(handoff.take(for: job("p\(index)", payload: payload)), plan)
            XCTAssertLessThanOrEqual(handoff.orderedKeys, 8, "after \(index + 1) keeps")
        }
        XCTAssertEqual(handoff.count, 1)
        XCTAssertEqual(handoff.take(for: job("stuck", payload: payload)), plan)
    }

    /// A plan older than the maximum age is dropped at the next keep, whether the hand-off is full (capacity 1: the
    /// second plan takes its place) or has room.
    func testDropsAPlanKeptLongerThanItsMaximumAgeAtTheNextKeep() throws {
        let plan = try plan("hi")
        let payload = plan.encoded()
        for capacity in [1, 10] {
            let handoff = PlanHandoff(capacity: capacity, maxAge: .zero)
            handoff.keep(plan, of: job("p0", payload: payload))
            // A moment later the first plan is older than the maximum age of zero.
            Thread.sleep(forTimeInterval: 0.001)
            handoff.keep(plan, of: job("p1", payload: payload))
            XCTAssertEqual(handoff.count, 1, "capacity \(capacity)")
            XCTAssertNil(handoff.take(for: job("p0", payload: payload)), "capacity \(capacity)")
            XCTAssertEqual(handoff.take(for: job("p1", payload: payload)), plan, "capacity \(capacity)")
        }
    }
}
