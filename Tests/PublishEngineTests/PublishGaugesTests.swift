import Foundation
import Observability
import PushStore
import XCTest

@testable import PublishEngine

/// The engine's gauges written when `/metrics` is read (`PublishEstimates`, `PublishSlots`): the values as they
/// are then, and no series before the first run.
final class PublishGaugesTests: XCTestCase {
    private func run(_ id: Int64, instance: String = "i") -> PublishRun {
        let job = PublishJob(
            instanceID: instance, publishID: "p\(id)", kind: .interests, targets: ["news"], payload: Data(),
            createdAt: Date())
        return PublishRun(
            claimed: ClaimedJob(
                id: PublishJobID(rawValue: id), job: job, cursor: 0, counters: [:], attempt: 1,
                leaseExpiresAt: Date()))
    }

    private func estimate(_ metrics: Metrics, _ instance: String) -> Double {
        metrics.value(.publishEstimateRemainingSeconds, ["beams_instance": instance])
    }

    func testTheEstimateGaugeShowsEachInstancesLongestWhenRead() {
        let metrics = Metrics()
        let estimates = PublishEstimates(metrics: metrics)
        XCTAssertFalse(metrics.render().contains("push_publish_estimate_remaining_seconds{"), "no run: no series")
        let (a, b, c) = (run(1), run(2), run(3, instance: "j"))
        estimates.update(a, instance: "i", seconds: 12.4)
        estimates.update(b, instance: "i", seconds: 30.6)
        estimates.update(c, instance: "j", seconds: nil)
        XCTAssertEqual(estimate(metrics, "i"), 0, "written when read, not before")
        _ = metrics.render()
        XCTAssertEqual(estimate(metrics, "i"), 31)
        XCTAssertEqual(estimate(metrics, "j"), 0)
        XCTAssertTrue(metrics.render().contains(#"push_publish_estimate_remaining_seconds{beams_instance="j"} 0"#))
        estimates.remove(b)
        _ = metrics.render()
        XCTAssertEqual(estimate(metrics, "i"), 12, "the longest of the runs left")
        estimates.update(a, instance: "i", seconds: nil)
        estimates.update(c, instance: "j", seconds: 5)
        _ = metrics.render()
        XCTAssertEqual(estimate(metrics, "i"), 0)
        XCTAssertEqual(estimate(metrics, "j"), 5)
        estimates.remove(a)
        estimates.remove(c)
        XCTAssertTrue(metrics.render().contains(#"push_publish_estimate_remaining_seconds{beams_instance="j"} 0"#))
        XCTAssertEqual(estimates.longest(of: "j"), 0)
    }

    func testTheSlotGaugesShowTheCountsWhenRead() {
        let metrics = Metrics()
        PublishSlots.declareMetrics(metrics)
        let slots = PublishSlots(slots: 1, expressSlots: 0, maxParked: 4, metrics: metrics)
        XCTAssertFalse(metrics.render().contains("push_publish_slots_busy 0"), "no run yet: no series")
        let (a, b) = (run(1), run(2))
        slots.admit(a, lane: .bulk)
        slots.admit(b, lane: .bulk)
        let first = metrics.render()
        XCTAssertTrue(first.contains("push_publish_slots_busy 1\n"), first)
        XCTAssertTrue(first.contains("push_publish_jobs_waiting 1\n"), first)
        XCTAssertTrue(first.contains("push_publish_jobs_parked 0\n"), first)
        slots.remove(a)
        let second = metrics.render()
        XCTAssertTrue(second.contains("push_publish_slots_busy 1\n"), "the slot went to the waiting run")
        XCTAssertTrue(second.contains("push_publish_jobs_waiting 0\n"), second)
        slots.remove(b)
        XCTAssertTrue(metrics.render().contains("push_publish_slots_busy 0\n"))
    }
}
