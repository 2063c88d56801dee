import PublishEngine
import XCTest

/// The webhook outbox's fair sharing as a state machine: no store, clock or socket (times are plain seconds).
final class WebhookSchedulerTests: XCTestCase {
    private typealias Scheduler = WebhookScheduler<Int>

    private func settings(
        concurrency: Int = 8, perDestination: Int = 2, held: Int = 4, threshold: Int = 3,
        open: Double = 30
    ) -> Scheduler.Settings {
        var settings = Scheduler.Settings()
        settings.concurrency = concurrency
        settings.perDestination = perDestination
        settings.heldPerDestination = held
        settings.breakerThreshold = threshold
        settings.breakerOpenSeconds = open
        return settings
    }

    private func sent(_ steps: [Scheduler.Step]) -> [Int] {
        steps.compactMap { if case .send(let item) = $0 { return item } else { return nil } }
    }

    private func skipped(_ steps: [Scheduler.Step]) -> [Int] {
        steps.compactMap { if case .skip(let item) = $0 { return item } else { return nil } }
    }

    func testOneDestinationGetsAtMostItsShareAndAnotherInstancesWebhookStartsAtOnce() {
        var scheduler = Scheduler(settings: settings(held: 10))
        for item in 1...6 {
            XCTAssertEqual(scheduler.add(item, instance: "A", destination: "slow", order: "#\(item)"), .queued)
        }
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1, 2], "two at a time to one destination")
        XCTAssertEqual(scheduler.add(100, instance: "B", destination: "fast", order: "#100"), .queued)
        XCTAssertEqual(sent(scheduler.next(now: 0)), [100], "B's webhook does not wait for A's destination")
        scheduler.finished(destination: "slow", order: "#1", result: .answered, now: 1)
        XCTAssertEqual(sent(scheduler.next(now: 1)), [3], "the freed slot goes to the next of the destination")
    }

    func testPastItsHeldShareADestinationsWebhooksAreDeferredNotQueued() {
        var scheduler = Scheduler(settings: settings(held: 3))
        for item in 1...3 {
            XCTAssertEqual(scheduler.add(item, instance: "A", destination: "d", order: "#\(item)"), .queued)
        }
        XCTAssertEqual(scheduler.add(4, instance: "A", destination: "d", order: "#4"), .deferred)
        XCTAssertEqual(
            scheduler.add(5, instance: "A", destination: "e", order: "#5"), .queued, "another destination has room")
        XCTAssertEqual(scheduler.heldCount, 4)
    }

    func testInstancesTakeTurnsForFreeSlots() {
        var scheduler = Scheduler(settings: settings(concurrency: 4, perDestination: 4, held: 16))
        for item in 1...8 { _ = scheduler.add(item, instance: "A", destination: "a\(item)", order: "#\(item)") }
        for item in 101...102 { _ = scheduler.add(item, instance: "B", destination: "b\(item)", order: "#\(item)") }
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1, 101, 2, 102], "A's eight queued first do not take every slot")
    }

    func testStartedAndFinishedOfOnePublishNeverOvertakeEachOther() {
        var scheduler = Scheduler(settings: settings(perDestination: 4, held: 8))
        _ = scheduler.add(1, instance: "A", destination: "d", order: "url p1")  // STARTED
        _ = scheduler.add(2, instance: "A", destination: "d", order: "url p1")  // FINISHED
        _ = scheduler.add(3, instance: "A", destination: "d", order: "url p2")
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1, 3], "p1's FINISHED waits for its STARTED; p2 goes alongside")
        scheduler.finished(destination: "d", order: "url p1", result: .answered, now: 1)
        XCTAssertEqual(sent(scheduler.next(now: 1)), [2])
    }

    func testTimeoutsInARowOpenTheBreakerWhichSkipsThenLetsOneTrialThroughAndClosesOnAnAnswer() {
        var scheduler = Scheduler(settings: settings(perDestination: 3, held: 10, threshold: 3, open: 30))
        for item in 1...6 { _ = scheduler.add(item, instance: "A", destination: "d", order: "#\(item)") }
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1, 2, 3])
        scheduler.finished(destination: "d", order: "#1", result: .timedOut, now: 3)
        scheduler.finished(destination: "d", order: "#2", result: .timedOut, now: 3)
        XCTAssertEqual(scheduler.breaker("d"), .closed(timeoutsInARow: 2))
        scheduler.finished(destination: "d", order: "#3", result: .timedOut, now: 3)
        XCTAssertEqual(scheduler.breaker("d"), .open(until: 33))
        XCTAssertEqual(scheduler.nextBreakerTrial, 33)
        let steps = scheduler.next(now: 3)
        XCTAssertEqual(skipped(steps), [4, 5, 6], "recorded as failed attempts, nothing sent")
        XCTAssertEqual(sent(steps), [])
        XCTAssertEqual(scheduler.heldCount, 0)

        for item in 7...8 { _ = scheduler.add(item, instance: "A", destination: "d", order: "#\(item)") }
        XCTAssertEqual(sent(scheduler.next(now: 33)), [7], "half open: one trial")
        XCTAssertEqual(scheduler.breaker("d"), .halfOpen(trialRunning: true))
        scheduler.finished(destination: "d", order: "#7", result: .answered, now: 34)
        XCTAssertEqual(scheduler.breaker("d"), .closed(timeoutsInARow: 0))
        XCTAssertEqual(sent(scheduler.next(now: 34)), [8])
    }

    func testAFailedTrialOpensTheBreakerAgainAndAnAnswerResetsTheCount() {
        var scheduler = Scheduler(settings: settings(perDestination: 1, held: 10, threshold: 2, open: 10))
        for item in 1...3 { _ = scheduler.add(item, instance: "A", destination: "d", order: "#\(item)") }
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1])
        scheduler.finished(destination: "d", order: "#1", result: .timedOut, now: 1)
        XCTAssertEqual(sent(scheduler.next(now: 1)), [2])
        scheduler.finished(destination: "d", order: "#2", result: .answered, now: 2)
        XCTAssertEqual(scheduler.breaker("d"), .closed(timeoutsInARow: 0), "an answer ends the run of timeouts")
        XCTAssertEqual(sent(scheduler.next(now: 2)), [3])
        scheduler.finished(destination: "d", order: "#3", result: .timedOut, now: 3)
        for item in 4...5 { _ = scheduler.add(item, instance: "A", destination: "d", order: "#\(item)") }
        XCTAssertEqual(sent(scheduler.next(now: 3)), [4])
        scheduler.finished(destination: "d", order: "#4", result: .timedOut, now: 4)
        XCTAssertEqual(scheduler.breaker("d"), .open(until: 14))
        XCTAssertEqual(skipped(scheduler.next(now: 4)), [5])
        _ = scheduler.add(6, instance: "A", destination: "d", order: "#6")
        XCTAssertEqual(sent(scheduler.next(now: 14)), [6])
        scheduler.finished(destination: "d", order: "#6", result: .timedOut, now: 17)
        XCTAssertEqual(scheduler.breaker("d"), .open(until: 27), "the trial timed out: open again")
    }

    func testRoomBoundsWhatIsClaimedToTwiceTheConcurrency() {
        var scheduler = Scheduler(settings: settings(concurrency: 2, perDestination: 2, held: 8))
        XCTAssertEqual(scheduler.room, 4)
        for item in 1...4 { _ = scheduler.add(item, instance: "A", destination: "d\(item)", order: "#\(item)") }
        XCTAssertEqual(scheduler.room, 0)
        XCTAssertEqual(sent(scheduler.next(now: 0)), [1, 2])
        scheduler.finished(destination: "d1", order: "#1", result: .answered, now: 1)
        XCTAssertEqual(scheduler.room, 1)
    }
}
