import PublishEngine
import XCTest

/// The publish slots as a pure state machine: who holds a slot, who waits, who is parked, and in what order
/// waiting runs are granted (round robin across instances, small before bulk, express slots for small runs).
final class PublishSlotSchedulerTests: XCTestCase {
    typealias Scheduler = PublishSlotScheduler<String>

    func testRunsAreGrantedAtOnceWhileSlotsAreFree() {
        var slots = Scheduler(slots: 2)
        XCTAssertTrue(slots.wantsClaim)
        XCTAssertEqual(slots.admit("a1", instance: "a", lane: .bulk), ["a1"])
        XCTAssertEqual(slots.admit("a2", instance: "a", lane: .bulk), ["a2"])
        XCTAssertFalse(slots.wantsClaim, "both slots are held")
        XCTAssertEqual(slots.admit("a3", instance: "a", lane: .bulk), [])
        XCTAssertEqual(slots.place(of: "a3"), .waiting)
        XCTAssertEqual(slots.remove("a1"), ["a3"], "a freed slot goes to the waiting run")
        XCTAssertEqual(slots.place(of: "a3"), .holding)
        XCTAssertNil(slots.place(of: "a1"))
    }

    func testParkedRunsHoldNoSlotSoEightPacedRunsLeaveRoomForAnotherInstance() {
        var slots = Scheduler(slots: 8, maxParked: 100)
        for n in 1...8 { XCTAssertEqual(slots.admit("a\(n)", instance: "a", lane: .bulk), ["a\(n)"]) }
        XCTAssertFalse(slots.wantsClaim)
        for n in 1...8 {
            let (parked, granted) = slots.park("a\(n)")
            XCTAssertTrue(parked)
            XCTAssertEqual(granted, [])
        }
        XCTAssertEqual(slots.parkedCount, 8)
        XCTAssertEqual(slots.regularHeld, 0)
        XCTAssertTrue(slots.wantsClaim, "a parked run leaves its slot to a queued publish")
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .bulk), ["b1"])
    }

    func testResumedRunWaitsForAFreeSlotAndGetsItBack() {
        var slots = Scheduler(slots: 1, maxParked: 10)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        XCTAssertTrue(slots.park("a1").parked)
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .bulk), ["b1"])
        XCTAssertEqual(slots.resume("a1"), [], "the only slot is b1's")
        XCTAssertEqual(slots.place(of: "a1"), .waiting)
        XCTAssertFalse(slots.wantsClaim, "a run waits here: nothing more is claimed")
        XCTAssertEqual(slots.remove("b1"), ["a1"])
        XCTAssertEqual(slots.place(of: "a1"), .holding)
    }

    func testParkingBeyondTheLimitKeepsTheSlot() {
        var slots = Scheduler(slots: 4, maxParked: 1)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        _ = slots.admit("a2", instance: "a", lane: .bulk)
        XCTAssertTrue(slots.park("a1").parked)
        XCTAssertFalse(slots.park("a2").parked, "one parked run is the limit")
        XCTAssertEqual(slots.place(of: "a2"), .holding)
        XCTAssertEqual(slots.regularHeld, 1)
        var empty = Scheduler(slots: 1, maxParked: 1)
        XCTAssertFalse(empty.park("x").parked, "an unknown run parks nowhere")
    }

    func testWaitingRunsAreGrantedRoundRobinAcrossInstances() {
        var slots = Scheduler(slots: 1)
        _ = slots.admit("hold", instance: "z", lane: .bulk)
        for n in 1...4 { _ = slots.admit("a\(n)", instance: "a", lane: .bulk) }
        _ = slots.admit("b1", instance: "b", lane: .bulk)
        _ = slots.admit("b2", instance: "b", lane: .bulk)
        _ = slots.admit("c1", instance: "c", lane: .bulk)
        var order: [String] = []
        var current = "hold"
        while let next = slots.remove(current).first {
            order.append(next)
            current = next
        }
        XCTAssertEqual(order, ["a1", "b1", "c1", "a2", "b2", "a3", "a4"])
    }

    func testWeightsGiveAnInstanceMoreGrantsPerTurn() {
        var slots = Scheduler(slots: 1, weights: ["a": 3])
        _ = slots.admit("hold", instance: "z", lane: .bulk)
        for n in 1...6 { _ = slots.admit("a\(n)", instance: "a", lane: .bulk) }
        for n in 1...3 { _ = slots.admit("b\(n)", instance: "b", lane: .bulk) }
        var order: [String] = []
        var current = "hold"
        while let next = slots.remove(current).first {
            order.append(next)
            current = next
        }
        XCTAssertEqual(order, ["a1", "a2", "a3", "b1", "a4", "a5", "a6", "b2", "b3"])
    }

    func testSmallRunGoesBeforeBulkRunsOfItsInstance() {
        var slots = Scheduler(slots: 1)
        _ = slots.admit("hold", instance: "a", lane: .bulk)
        _ = slots.admit("big1", instance: "a", lane: .bulk)
        _ = slots.admit("big2", instance: "a", lane: .bulk)
        _ = slots.admit("small", instance: "a", lane: .small)
        XCTAssertEqual(slots.remove("hold"), ["small"])
    }

    func testSmallRunTakesAnExpressSlotWhileBulkRunsHoldEveryRegularOne() {
        var slots = Scheduler(slots: 2, expressSlots: 1)
        _ = slots.admit("big1", instance: "a", lane: .bulk)
        _ = slots.admit("big2", instance: "a", lane: .bulk)
        XCTAssertTrue(slots.wantsClaim, "the express slot is free")
        XCTAssertEqual(slots.admit("small", instance: "b", lane: .small), ["small"])
        XCTAssertEqual(slots.expressHeld, 1)
        XCTAssertFalse(slots.wantsClaim)
        XCTAssertEqual(slots.remove("small"), [])
        XCTAssertEqual(slots.expressHeld, 0)
    }

    func testBulkRunNeverTakesAnExpressSlotAndBlocksFurtherClaimsWhileItWaits() {
        var slots = Scheduler(slots: 1, expressSlots: 1)
        _ = slots.admit("big1", instance: "a", lane: .bulk)
        XCTAssertEqual(slots.admit("big2", instance: "b", lane: .bulk), [])
        XCTAssertEqual(slots.expressHeld, 0)
        XCTAssertFalse(slots.wantsClaim, "one claimed run that cannot send is enough")
        XCTAssertEqual(
            slots.admit("small", instance: "c", lane: .small), ["small"],
            "a small run passes the waiting bulk one into the express slot")
        XCTAssertEqual(slots.remove("big1"), ["big2"])
    }

    func testSmallRunPrefersExpressSoARegularSlotStaysForBulk() {
        var slots = Scheduler(slots: 2, expressSlots: 1)
        XCTAssertEqual(slots.admit("small", instance: "a", lane: .small), ["small"])
        XCTAssertEqual(slots.expressHeld, 1)
        XCTAssertEqual(slots.regularHeld, 0)
    }

    func testRemovingAWaitingOrParkedRunForgetsIt() {
        var slots = Scheduler(slots: 1, maxParked: 4)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        _ = slots.admit("b1", instance: "b", lane: .bulk)
        _ = slots.admit("c1", instance: "c", lane: .bulk)
        XCTAssertEqual(slots.remove("b1"), [], "a waiting run leaves; nothing freed")
        XCTAssertEqual(slots.waitingCount, 1)
        XCTAssertEqual(slots.remove("a1"), ["c1"])
        XCTAssertTrue(slots.park("c1").parked)
        XCTAssertEqual(slots.remove("c1"), [])
        XCTAssertEqual(slots.parkedCount, 0)
        XCTAssertEqual(slots.regularHeld, 0)
        XCTAssertEqual(slots.waitingCount, 0)
        XCTAssertTrue(slots.wantsClaim)
        XCTAssertEqual(slots.remove("c1"), [], "removing twice is harmless")
    }

    func testAdmittingAKnownRunChangesNothing() {
        var slots = Scheduler(slots: 1)
        XCTAssertEqual(slots.admit("a1", instance: "a", lane: .bulk), ["a1"])
        XCTAssertEqual(slots.admit("a1", instance: "a", lane: .bulk), [])
        XCTAssertEqual(slots.regularHeld, 1)
        XCTAssertEqual(slots.waitingCount, 0)
    }

    func testInstanceHoldingNoSlotGetsAFloorSlotWhileAnotherInstanceHoldsEveryOne() {
        var slots = Scheduler(slots: 2, instanceFloor: true)
        XCTAssertEqual(slots.admit("a1", instance: "a", lane: .bulk), ["a1"])
        XCTAssertEqual(slots.admit("a2", instance: "a", lane: .bulk), ["a2"])
        XCTAssertEqual(slots.admit("a3", instance: "a", lane: .bulk), [], "a holds slots: its third run waits")
        XCTAssertFalse(slots.wantsClaim)
        XCTAssertTrue(slots.wantsFloorClaim, "an instance with no run here could still start one")
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .bulk), ["b1"], "b held nothing: it starts at once")
        XCTAssertEqual(slots.slot(of: "b1"), .floor)
        XCTAssertEqual(slots.floorHeld, 1)
        XCTAssertEqual(slots.admit("b2", instance: "b", lane: .bulk), [], "one floor slot per instance")
        XCTAssertEqual(slots.remove("b1"), ["b2"], "b holds nothing again: its next run takes the floor slot")
        XCTAssertEqual(slots.slot(of: "b2"), .floor)
        XCTAssertEqual(slots.remove("a1"), ["a3"], "a regular slot goes to a waiting run as before")
        XCTAssertEqual(slots.slot(of: "a3"), .regular)
        XCTAssertEqual(slots.remove("b2"), [])
        XCTAssertEqual(slots.floorHeld, 0)
        XCTAssertEqual(slots.regularHeld, 2)
    }

    func testWithoutTheFloorAnotherInstanceWaitsForARegularSlot() {
        var slots = Scheduler(slots: 1)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        XCTAssertFalse(slots.wantsFloorClaim)
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .bulk), [])
        XCTAssertEqual(slots.remove("a1"), ["b1"])
    }

    func testSmallRunTakesAFreeExpressSlotBeforeItsInstancesFloorSlot() {
        var slots = Scheduler(slots: 1, expressSlots: 1, instanceFloor: true)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .small), ["b1"])
        XCTAssertEqual(slots.slot(of: "b1"), .express)
        XCTAssertEqual(slots.admit("c1", instance: "c", lane: .bulk), ["c1"], "only the express slot was free")
        XCTAssertEqual(slots.slot(of: "c1"), .floor)
    }

    func testParkedRunOfAnInstanceHoldingNothingResumesInItsFloorSlot() {
        var slots = Scheduler(slots: 1, maxParked: 4, instanceFloor: true)
        _ = slots.admit("a1", instance: "a", lane: .bulk)
        XCTAssertTrue(slots.park("a1").parked)
        XCTAssertEqual(slots.admit("b1", instance: "b", lane: .bulk), ["b1"])
        XCTAssertEqual(slots.slot(of: "b1"), .regular)
        XCTAssertEqual(slots.resume("a1"), ["a1"], "a holds no slot: its paced run does not wait behind b's")
        XCTAssertEqual(slots.slot(of: "a1"), .floor)
    }

    /// Any sequence of events keeps the counts consistent and never holds more slots than there are (with the
    /// floor: at most one floor slot per instance, and no instance waits while it holds nothing).
    func testRandomEventsKeepTheSlotAccountingConsistent() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<100 {
            let floor = round % 2 == 1
            var slots = Scheduler(slots: 3, expressSlots: 1, maxParked: 2, weights: ["i1": 2], instanceFloor: floor)
            var places: [String: Scheduler.Place] = [:]
            var instances: [String: String] = [:]
            for step in 0..<200 {
                let key = "r\(Int.random(in: 0..<12, using: &generator))"
                var granted: [String] = []
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    let instance = "i\(Int.random(in: 0..<3, using: &generator))"
                    granted = slots.admit(
                        key, instance: instance, lane: Bool.random(using: &generator) ? .small : .bulk)
                    if places[key] == nil {
                        places[key] = .waiting
                        instances[key] = instance
                    }
                case 1:
                    let (parked, more) = slots.park(key)
                    if parked { places[key] = .parked }
                    granted = more
                case 2:
                    granted = slots.resume(key)
                    if places[key] == .parked { places[key] = .waiting }
                default:
                    granted = slots.remove(key)
                    places[key] = nil
                }
                for key in granted {
                    XCTAssertEqual(places[key], .waiting, "step \(step): only a waiting run is granted")
                    places[key] = .holding
                }
                for (key, place) in places { XCTAssertEqual(slots.place(of: key), place, "step \(step): \(key)") }
                XCTAssertLessThanOrEqual(slots.regularHeld, 3)
                XCTAssertLessThanOrEqual(slots.expressHeld, 1)
                XCTAssertLessThanOrEqual(slots.parkedCount, 2)
                XCTAssertEqual(
                    slots.regularHeld + slots.expressHeld + slots.floorHeld,
                    places.values.filter { $0 == .holding }.count)
                XCTAssertEqual(slots.waitingCount, places.values.filter { $0 == .waiting }.count)
                XCTAssertEqual(slots.parkedCount, places.values.filter { $0 == .parked }.count)
                // Work conservation: nobody waits while a slot they could use is free.
                if slots.waitingCount > 0 { XCTAssertEqual(slots.regularHeld, 3, "step \(step)") }
                let live = places.keys.filter { slots.place(of: $0) != nil }
                let floors = live.filter { slots.slot(of: $0) == .floor }.map { instances[$0] ?? "" }
                XCTAssertEqual(Set(floors).count, floors.count, "step \(step): one floor slot per instance")
                if !floor { XCTAssertEqual(slots.floorHeld, 0) }
                for key in live where floor && places[key] == .waiting {
                    XCTAssertTrue(
                        live.contains { places[$0] == .holding && instances[$0] == instances[key] },
                        "step \(step): \(key) waits although its instance holds nothing")
                }
            }
        }
    }
}
