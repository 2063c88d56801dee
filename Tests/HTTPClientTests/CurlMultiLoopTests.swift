import CLibCurl
import HTTPClient
import XCTest

/// The curl loop itself, with a driver that starts no transfers: hand-over order, wake-ups and stopping.
/// (Real transfers through it are `WebhookExchangeTests` and the APNs client's tests.)
final class CurlMultiLoopTests: XCTestCase {
    /// Records what the loop hands it; its leftover is that record.
    private final class RecordingDriver: CurlMultiDriver {
        private let timeout: Int32
        private let onJob: @Sendable (String) -> Void
        private var log: [String] = []

        init(pollTimeout: Int32, onJob: @escaping @Sendable (String) -> Void = { _ in }) {
            timeout = pollTimeout
            self.onJob = onJob
        }

        func prepare(_ jobs: [String], multi: CurlMulti) {
            for job in jobs {
                log.append(job)
                onJob(job)
            }
        }

        func performed(_ error: CurlError?, multi: CurlMulti) {
            if let error { log.append("perform failed: \(error)") }
        }

        func ended(_ easy: UnsafeMutableRawPointer, code: CURLcode, multi: CurlMulti) {
            log.append("ended")  // no transfer was started: never expected
        }

        func pollTimeout() -> Int32 { timeout }

        func abort(unstarted: [String], multi: CurlMulti) -> [String] {
            log += unstarted.map { "unstarted \($0)" }
            log.append("abort")
            return log
        }
    }

    func testSubmittedJobWakesALoopThatPollsForAMinute() async throws {
        let arrived = expectation(description: "the job reached the driver")
        let driver = RecordingDriver(pollTimeout: 60_000) { job in if job == "a" { arrived.fulfill() } }
        let loop = CurlMultiLoop(name: "test-loop", multi: try CurlMulti(), driver: driver)
        loop.start()
        XCTAssertTrue(loop.submit("a"))
        // Without the wake-up the loop would sleep in its 60 s poll.
        await fulfillment(of: [arrived], timeout: 10)
        let leftover = await loop.stop()
        XCTAssertEqual(leftover, ["a", "abort"])
    }

    func testJobsReachTheDriverOnceEachInOrder() async throws {
        let loop = CurlMultiLoop(name: "test-loop", multi: try CurlMulti(), driver: RecordingDriver(pollTimeout: 1000))
        loop.start()
        let jobs = (0..<500).map { String($0) }
        for job in jobs { XCTAssertTrue(loop.submit(job)) }
        let leftover = await loop.stop()
        XCTAssertEqual(leftover.last, "abort")
        // Each job either reached a turn or was handed to `abort` unstarted, in submission order.
        let seen = leftover.dropLast().map { $0.hasPrefix("unstarted ") ? String($0.dropFirst(10)) : $0 }
        XCTAssertEqual(seen, jobs)
    }

    func testStopRefusesLaterJobsAndReturnsTheSameLeftoverAgain() async throws {
        let loop = CurlMultiLoop(
            name: "test-loop", multi: try CurlMulti(), driver: RecordingDriver(pollTimeout: 60_000))
        loop.start()
        XCTAssertTrue(loop.submit("before"))
        let first = await loop.stop()
        XCTAssertFalse(loop.submit("after"), "a stopped loop takes no job")
        let second = await loop.stop()
        XCTAssertEqual(first, second)
        XCTAssertFalse(first.contains { $0.contains("after") })
        XCTAssertEqual(first.last, "abort")
    }

    /// Every caller of `stop()` gets the one leftover, the ones racing with the loop's exit and one whose task was
    /// cancelled before it asked (the wait ignores cancellation: what the loop left is still handed over).
    func testConcurrentStopsAndAStopFromACancelledTaskAllGetTheLeftover() async throws {
        let loop = CurlMultiLoop(
            name: "test-loop", multi: try CurlMulti(), driver: RecordingDriver(pollTimeout: 60_000))
        loop.start()
        XCTAssertTrue(loop.submit("job"))
        let stoppers = (0..<4).map { _ in Task { await loop.stop() } }
        let cancelled = Task { () -> [String] in
            withUnsafeCurrentTask { $0?.cancel() }
            return await loop.stop()
        }
        var leftovers: [[String]] = []
        for stopper in stoppers { leftovers.append(await stopper.value) }
        leftovers.append(await cancelled.value)
        XCTAssertEqual(leftovers.first?.last, "abort")
        XCTAssertTrue(leftovers.allSatisfy { $0 == leftovers[0] }, "\(leftovers)")
    }
}
