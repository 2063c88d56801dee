import Dispatch
import Foundation
import Locking
import XCTest

@testable import WebPush

/// The encryption workers' hand-off: FIFO per worker (so one subscription's messages keep their order), hand-offs
/// grouped after their work in queue order, a fixed worker per endpoint, work on the workers' own threads, and
/// nothing dropped after `stop()`.
final class WebPushEncryptionWorkersTests: XCTestCase {
    func testWorkQueuedOnOneWorkerRunsInSubmitOrderOffTheCallersThread() {
        let workers = WebPushEncryptionWorkers(count: 3, name: "test")
        let order = Locked<[Int]>([])
        let threads = Locked<Set<String>>([])
        let done = DispatchSemaphore(value: 0)
        let count = 2_000
        for value in 0..<count {
            workers.prepare(on: 1) {
                order.withLock { $0.append(value) }
                threads.withLock { _ = $0.insert(Self.threadName()) }
                if value == count - 1 { done.signal() }
                return nil
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(order.withLock { $0 }, Array(0..<count))
        XCTAssertEqual(threads.withLock { $0 }, ["test-enc-1"])
        workers.stop()
    }

    func testHandOffsRunAfterTheirWorkInQueueOrderAtMostHandOffBatchAtATime() {
        let workers = WebPushEncryptionWorkers(count: 1, name: "test")
        let events = Locked<[String]>([])
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        // The worker takes the first piece alone and blocks in it, so the rest queue up as one batch.
        workers.prepare(on: 0) {
            started.signal()
            release.wait()
            events.withLock { $0.append("work 0") }
            return { events.withLock { $0.append("hand-off 0") } }
        }
        XCTAssertEqual(started.wait(timeout: .now() + 30), .success)
        let batch = WebPushEncryptionWorkers.handOffBatch
        let count = 2 * batch + 3
        for index in 1...count {
            workers.prepare(on: 0) {
                events.withLock { $0.append("work \(index)") }
                // Every fourth piece has nothing to hand on (an encryption that failed).
                guard index % 4 != 0 else { return nil }
                return {
                    events.withLock { $0.append("hand-off \(index)") }
                    if index == count { done.signal() }
                }
            }
        }
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        var expected = ["work 0", "hand-off 0"]
        var pending: [String] = []
        for index in 1...count {
            expected.append("work \(index)")
            if index % 4 != 0 { pending.append("hand-off \(index)") }
            if pending.count == batch {
                expected += pending
                pending = []
            }
        }
        expected += pending
        XCTAssertEqual(events.withLock { $0 }, expected)
        XCTAssertGreaterThan(batch, 1)
        workers.stop()
    }

    func testPreparedWorkAfterStopRunsWithItsHandOffOnTheCallersThread() {
        let workers = WebPushEncryptionWorkers(count: 1, name: "test")
        workers.stop()
        let events = Locked<[String]>([])
        workers.prepare(on: 0) {
            events.withLock { $0.append("work") }
            return { events.withLock { $0.append("hand-off") } }
        }
        XCTAssertEqual(events.withLock { $0 }, ["work", "hand-off"])
    }

    func testOneEndpointAlwaysGoesToTheSameWorkerAndEndpointsSpreadOverAll() {
        let workers = WebPushEncryptionWorkers(count: 4, name: "test")
        let endpoint = "https://fcm.googleapis.com/fcm/send/abc"
        let first = workers.worker(for: endpoint)
        for _ in 0..<100 { XCTAssertEqual(workers.worker(for: endpoint), first) }
        let used = Set((0..<400).map { workers.worker(for: "https://push.example/sub-\($0)") })
        XCTAssertEqual(used, [0, 1, 2, 3])
        workers.stop()
    }

    func testWorkAfterStopRunsAtOnceOnTheCallersThreadSoNothingIsDropped() {
        let workers = WebPushEncryptionWorkers(count: 2, name: "test")
        workers.stop()
        let ran = Locked(false)
        workers.prepare(on: 0) {
            ran.withLock { $0 = true }
            return nil
        }
        XCTAssertTrue(ran.withLock { $0 })  // synchronous: no worker thread is left to run it
    }

    /// The calling thread's OS-level name.
    private static func threadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
    }
}
