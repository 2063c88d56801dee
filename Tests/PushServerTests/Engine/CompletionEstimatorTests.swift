import BeamsModel
import Foundation
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// The completion estimate as a pure value: observations at chosen moments, no clock, no sockets.
final class CompletionEstimatorTests: XCTestCase {
    /// Feeds `rate` answers per second from `start` for `seconds`, one observation every `step` seconds.
    private func feed(
        _ estimator: inout CompletionEstimator, done: inout Int64, rate: Double, from start: Double,
        for seconds: Double, step: Double = 2
    ) -> Double {
        var now = start
        while now < start + seconds - 1e-9 {
            now += step
            done += Int64((rate * step).rounded())
            estimator.observe(done: done, at: now)
        }
        return now
    }

    func testConstantRateGivesRemainingOverThatRate() throws {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 100)
        let now = feed(&estimator, done: &done, rate: 500, from: 100, for: 20)
        let estimate = try XCTUnwrap(estimator.estimate(remaining: 10_000, at: now))
        XCTAssertEqual(
            estimate.ratePerSecond, 500, accuracy: 0.001, "bias correction: a constant rate reads as itself at once")
        XCTAssertEqual(estimate.secondsRemaining, 20, accuracy: 0.01)
        XCTAssertEqual(estimate.basis, .observed)
    }

    func testFirstObservationIsNotBiasedTowardsZero() throws {
        var estimator = CompletionEstimator()
        estimator.start(done: 0, at: 0)
        XCTAssertTrue(estimator.observe(done: 200, at: 2))
        XCTAssertEqual(
            try XCTUnwrap(estimator.observedRate), 100, accuracy: 0.001,
            "an EMA starting at 0 would read 30 after one observation")
    }

    func testRateChangeMovesTheEstimateTowardsTheNewRate() throws {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 0)
        var now = feed(&estimator, done: &done, rate: 1000, from: 0, for: 30)
        now = feed(&estimator, done: &done, rate: 250, from: now, for: 4)
        let partway = try XCTUnwrap(estimator.observedRate)
        XCTAssertLessThan(partway, 1000, "the drop shows after two observations")
        XCTAssertGreaterThan(partway, 250, "smoothed, not instantaneous")
        now = feed(&estimator, done: &done, rate: 250, from: now, for: 30)
        XCTAssertEqual(
            try XCTUnwrap(estimator.observedRate), 250, accuracy: 5, "fifteen observations later it is the new rate")
        let estimate = try XCTUnwrap(estimator.estimate(remaining: 2500, at: now))
        XCTAssertEqual(estimate.secondsRemaining, 10, accuracy: 0.3)
    }

    func testObservationsCloserThanTheIntervalAreNotTaken() {
        var estimator = CompletionEstimator(interval: 2)
        estimator.start(done: 0, at: 0)
        XCTAssertFalse(estimator.observe(done: 50, at: 0.2), "a checkpoint every 200 ms is not an observation each")
        XCTAssertFalse(estimator.observe(done: 100, at: 1.9))
        XCTAssertTrue(estimator.observe(done: 400, at: 2.0))
        XCTAssertEqual(estimator.observedRate ?? 0, 200, accuracy: 0.001, "over the whole window since the last one")
    }

    func testPacingBoundsAFasterObservedRate() throws {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 0)
        // A burst (a resumed bucket, a fast start) observed above the pace: the pace is what the rest will get.
        let now = feed(&estimator, done: &done, rate: 300, from: 0, for: 6)
        let bounds = CompletionEstimator.Bounds(pacingPerSecond: 100)
        let estimate = try XCTUnwrap(estimator.estimate(remaining: 6000, at: now, bounds: bounds))
        XCTAssertEqual(estimate.ratePerSecond, 100, accuracy: 0.001)
        XCTAssertEqual(estimate.secondsRemaining, 60, accuracy: 0.001)
        let slower = try XCTUnwrap(
            estimator.estimate(
                remaining: 6000, at: now,
                bounds: .init(pacingPerSecond: 1000, budgetPerSecond: 50)))
        XCTAssertEqual(slower.ratePerSecond, 50, accuracy: 0.001, "the tighter of pacing and budget")
    }

    func testObservedRateBelowThePacingIsKept() throws {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 0)
        let now = feed(&estimator, done: &done, rate: 40, from: 0, for: 10)
        let estimate = try XCTUnwrap(estimator.estimate(remaining: 400, at: now, bounds: .init(pacingPerSecond: 100)))
        XCTAssertEqual(
            estimate.ratePerSecond, 40, accuracy: 0.001, "senders slower than the pace: the pace does not help")
    }

    func testBeforeAnyObservationPacingAloneOrNothing() throws {
        var estimator = CompletionEstimator()
        estimator.start(done: 0, at: 0)
        let paced = try XCTUnwrap(estimator.estimate(remaining: 1200, at: 0, bounds: .init(pacingPerSecond: 20)))
        XCTAssertEqual(paced.basis, .pacing)
        XCTAssertEqual(paced.secondsRemaining, 60, accuracy: 0.001)
        XCTAssertNil(estimator.estimate(remaining: 1200, at: 0), "unpaced, nothing observed: no guess")
        XCTAssertNil(
            estimator.estimate(remaining: 1200, at: 0, bounds: .init(budgetPerSecond: 20)),
            "a budget is a ceiling, not a pace: alone it says nothing about the rate")
    }

    func testZeroProgressGivesNoEstimate() {
        var estimator = CompletionEstimator()
        estimator.start(done: 500, at: 0)
        estimator.observe(done: 500, at: 2)
        estimator.observe(done: 500, at: 4)
        XCTAssertEqual(estimator.observedRate, 0)
        XCTAssertNil(
            estimator.estimate(remaining: 100, at: 4, bounds: .init(pacingPerSecond: 10)),
            "stalled (an open breaker): no estimate rather than an infinite or paced one")
    }

    func testFinishedGivesNoEstimate() {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 0)
        let now = feed(&estimator, done: &done, rate: 100, from: 0, for: 10)
        XCTAssertNil(estimator.estimate(remaining: 0, at: now))
        XCTAssertNil(estimator.estimate(remaining: -3, at: now, bounds: .init(pacingPerSecond: 5)))
    }

    func testALaterRoundBoundsTheCompletion() throws {
        var estimator = CompletionEstimator()
        var done: Int64 = 0
        estimator.start(done: 0, at: 0)
        let now = feed(&estimator, done: &done, rate: 100, from: 0, for: 10)
        let estimate = try XCTUnwrap(estimator.estimate(remaining: 100, at: now, bounds: .init(notBefore: now + 3600)))
        XCTAssertEqual(estimate.secondsRemaining, 3600, accuracy: 0.001, "the last local-time round is an hour away")
    }

    func testStatusSumsTheRunsOfEveryShard() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // Two shards on two nodes: 6,000 and 4,000 left, at 100/s and 150/s: together 10,000 at 250/s = 40 s.
        var status = PublishStatus(
            id: PublishJobID(rawValue: 1), instanceID: "i", publishID: "p", kind: .interests, state: .running,
            counters: [
                .estimateRemaining: 10_000, .estimateRateMilli: 250_000,
                .targets: 5000,
            ],
            targetsTotal: nil, summary: nil, attempts: 1, createdAt: now, startedAt: now, finishedAt: nil,
            delivered: 0, opened: 0)
        let estimate = try XCTUnwrap(PublishEstimate(status, now: now))
        XCTAssertEqual(estimate.completionAt.timeIntervalSince(now), 40, accuracy: 0.001)
        XCTAssertEqual(estimate.members["estimatedCompletionAt"], .string(now.addingTimeInterval(40).iso8601))
        XCTAssertEqual(estimate.members["estimateRatePerSecond"], .double(250))
        XCTAssertEqual(estimate.members["remainingTargets"], .int(10_000))
        status.counters[.estimateRateMilli] = 17
        XCTAssertEqual(
            try XCTUnwrap(PublishEstimate(status, now: now)).members["estimateRatePerSecond"], .double(0.017),
            "a pace of one a minute is not rounded to 0")
        status.cancelRequested = true
        XCTAssertNil(PublishEstimate(status, now: now), "being cancelled: no completion to expect")
        status.cancelRequested = false
        status.state = .finished
        XCTAssertNil(PublishEstimate(status, now: now), "finished: none, whatever the counters say")
        status.state = .running
        status.counters[.estimateRemaining] = 0
        XCTAssertNil(PublishEstimate(status, now: now), "between rounds or after the runs stopped: none")
    }

    func testRunQueuesTheEstimateAsCounterDifferencesAndZeroesThemWhenItStops() throws {
        let job = PublishJob(
            instanceID: "i", publishID: "p", kind: .interests, targets: ["news"], payload: Data(),
            createdAt: Date())
        // A resumed run: its claim's counters hold the estimate of the run before it.
        let claimed = ClaimedJob(
            id: PublishJobID(rawValue: 7), job: job, cursor: 0,
            counters: [
                .targets: 100, .estimateRemaining: 900,
                .estimateRateMilli: 50_000,
            ], attempt: 2,
            leaseExpiresAt: Date())
        let run = PublishRun(claimed: claimed)
        let bounds = CompletionEstimator.Bounds(pacingPerSecond: 25)
        let first = try XCTUnwrap(run.observeProgress(total: 1000, done: 100, bounds: bounds, at: 0))
        XCTAssertEqual(first.basis, .pacing)
        XCTAssertEqual(first.remaining, 900)
        var batch = run.drain()
        XCTAssertNil(batch.counters[.estimateRemaining], "unchanged: nothing to write")
        XCTAssertEqual(batch.counters[.estimateRateMilli], 25_000 - 50_000, "the difference, not the value")
        run.passedOver(10)
        let between = try XCTUnwrap(run.observeProgress(total: 1000, done: 100, bounds: bounds, at: 1))
        XCTAssertEqual(between.basis, .pacing, "within the interval: no observation, but the targets left are fresh")
        XCTAssertEqual(between.remaining, 890)
        run.passedOver(40)
        let second = try XCTUnwrap(run.observeProgress(total: 1000, done: 100, bounds: bounds, at: 2))
        XCTAssertEqual(second.remaining, 850)
        XCTAssertEqual(second.basis, .observed)
        batch = run.drain()
        XCTAssertEqual(batch.counters[.estimateRemaining], -50, "both changes since the last drain")
        XCTAssertNil(batch.counters[.estimateRateMilli], "25/s observed, as the pace: unchanged")
        run.clearEstimate()
        batch = run.drain()
        XCTAssertEqual(batch.counters[.estimateRemaining], -850)
        XCTAssertEqual(batch.counters[.estimateRateMilli], -25_000)
        XCTAssertNil(
            run.observeProgress(total: 1000, done: 100, bounds: bounds, at: 10),
            "a run that stopped sending makes no estimate again")
        XCTAssertNil(run.estimate)
    }

    /// What lets an unpaced run count its targets only once it has read one (`RunProgress.countsAtFirstTarget`):
    /// until it has passed a target, its estimate and the counters it queues are the same whatever its total.
    func testAnUnpacedRunEstimatesTheSameWhateverItsTotalUntilATargetPassed() throws {
        let job = PublishJob(
            instanceID: "i", publishID: "p", kind: .interests, targets: ["news"], payload: Data(),
            createdAt: Date())
        let claimed = ClaimedJob(
            id: PublishJobID(rawValue: 7), job: job, cursor: 0, counters: [:], attempt: 1, leaseExpiresAt: Date())
        var drained: [PublishCounters] = []
        for total: Int64? in [nil, 0, 1, 5000] {
            let run = PublishRun(claimed: claimed)
            for at in [0.0, 1, 2.5, 6] {
                XCTAssertNil(
                    run.observeProgress(total: total, done: 0, bounds: .init(), at: at),
                    "total \(String(describing: total))")
            }
            drained.append(run.drain().counters)
        }
        XCTAssertTrue(drained.allSatisfy { $0 == drained[0] }, "the same counters queued whatever the total")
        let paced = PublishRun(claimed: claimed)
        XCTAssertNotNil(
            paced.observeProgress(total: 5000, done: 0, bounds: .init(pacingPerSecond: 10), at: 0),
            "a paced run's first estimate rests on its total: it counts before it sends")
        let counted = PublishRun(claimed: claimed)
        counted.observeProgress(total: 5000, done: 0, bounds: .init(), at: 0)
        counted.passedOver(100)
        XCTAssertNotNil(
            counted.observeProgress(total: 5000, done: 0, bounds: .init(), at: 2.5),
            "once targets passed, the total matters (the count was read by then)")
    }

    func testAPlanCountsAtItsFirstTargetOnlyWhenUnpacedAndFedPageByPage() throws {
        let body = #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}}}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        func plan(_ delivery: DeliveryOptions?) throws -> PublishPlan {
            try PublishPlan(
                request: request, body: Array(body.utf8), instanceID: "inst", publishID: "pub", delivery: delivery)
        }
        XCTAssertTrue(RunProgress.countsAtFirstTarget(try plan(nil)))
        var delivery = DeliveryOptions()
        delivery.throttlePerMinute = 600
        XCTAssertFalse(RunProgress.countsAtFirstTarget(try plan(delivery)))
    }
}
