import CLibCurl
import Dispatch
import Foundation
import HTTPClient
import Locking
import XCTest

/// The curl loop itself, with a driver that starts no transfers: hand-over order, wake-ups and stopping.
/// (Real transfers through it are `WebhookExchangeTests` and the APNs client's tests.)
final class CurlMultiLoopTests: XCTestCase {
    /// Records what the loop hands it; its leftover is that record.
    private final class RecordingDriver: CurlMultiDriver {
        private let timeout: Int32
        private let onJob: @Sendable (String) -> Void
        private let onTurn: @Sendable ([String]) -> Void
        private var log: [String] = []

        init(
            pollTimeout: Int32, onJob: @escaping @Sendable (String) -> Void = { _ in },
            onTurn: @escaping @Sendable ([String]) -> Void = { _ in }
        ) {
            timeout = pollTimeout
            self.onJob = onJob
            self.onTurn = onTurn
        }

        func prepare(_ jobs: [String], multi: CurlMulti) {
            onTurn(jobs)
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

    /// Inside `CurlLoopWakeUps.deferred` a submit does not wake a loop sleeping in a minute-long poll; the end of
    /// the block wakes it once, and every job of the group reaches it in order.
    func testJobsSubmittedInADeferredBlockWakeTheLoopWhenTheBlockEnds() async throws {
        let idle = expectation(description: "the loop took the first job, then turned once more with none")
        let early = expectation(description: "a deferred job reached the loop before the block ended")
        early.isInverted = true
        let group = expectation(description: "the group reached the loop after the block")
        let turns = Locked(0)
        let driver = RecordingDriver(
            pollTimeout: 60_000,
            onJob: { job in
                if job == "g0" { early.fulfill() }
                if job == "g3" { group.fulfill() }
            },
            onTurn: { jobs in
                // "first" is submitted before the loop starts, so its wake-up is still pending at the first poll:
                // the second turn comes at once and takes nothing; after it the loop sleeps in its 60 s poll.
                if turns.withLock({
                    $0 += 1; return $0
                }) == 2 && jobs.isEmpty {
                    idle.fulfill()
                }
            })
        let loop = CurlMultiLoop(name: "test-loop", multi: try CurlMulti(), driver: driver)
        XCTAssertTrue(loop.submit("first"))
        loop.start()
        await fulfillment(of: [idle], timeout: 10)
        // The group is submitted on a thread of its own, which holds the block open until the test has watched for
        // an early delivery.
        let submitted = expectation(description: "the group was submitted inside the block")
        let release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            CurlLoopWakeUps.deferred {
                for job in ["g0", "g1", "g2"] { XCTAssertTrue(loop.submit(job)) }
                // Nested blocks wake at the end of the outermost.
                CurlLoopWakeUps.deferred { XCTAssertTrue(loop.submit("g3")) }
                submitted.fulfill()
                release.wait()
            }
        }
        await fulfillment(of: [submitted], timeout: 10)
        await fulfillment(of: [early], timeout: 0.5)
        release.signal()
        await fulfillment(of: [group], timeout: 10)
        let leftover = await loop.stop()
        XCTAssertEqual(leftover, ["first", "g0", "g1", "g2", "g3", "abort"])
    }

    /// A submit outside any deferred block, on a thread that has used one before, still wakes the loop at once.
    func testASubmitAfterADeferredBlockOnTheSameThreadWakesTheLoopAtOnce() async throws {
        let arrived = expectation(description: "the later job reached the loop")
        let driver = RecordingDriver(pollTimeout: 60_000) { job in if job == "later" { arrived.fulfill() } }
        let loop = CurlMultiLoop(name: "test-loop", multi: try CurlMulti(), driver: driver)
        loop.start()
        Thread.detachNewThread {
            CurlLoopWakeUps.deferred { XCTAssertTrue(loop.submit("grouped")) }
            XCTAssertTrue(loop.submit("later"))
        }
        await fulfillment(of: [arrived], timeout: 10)
        let leftover = await loop.stop()
        XCTAssertEqual(leftover, ["grouped", "later", "abort"])
    }
}
