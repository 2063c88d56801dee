import Dispatch
import Foundation
import Locking
import XCTest

@testable import WebPush

/// The encryption workers' hand-off: FIFO per worker (so one subscription's messages keep their order), a fixed
/// worker per endpoint, work on the workers' own threads, and nothing dropped after `stop()`.
final class WebPushEncryptionWorkersTests: XCTestCase {
    func testWorkQueuedOnOneWorkerRunsInSubmitOrderOffTheCallersThread() {
        let workers = WebPushEncryptionWorkers(count: 3, name: "test")
        let order = Locked<[Int]>([])
        let threads = Locked<Set<String>>([])
        let done = DispatchSemaphore(value: 0)
        let count = 2_000
        for value in 0..<count {
            workers.run(on: 1) {
                order.withLock { $0.append(value) }
                threads.withLock { _ = $0.insert(Self.threadName()) }
                if value == count - 1 { done.signal() }
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(order.withLock { $0 }, Array(0..<count))
        XCTAssertEqual(threads.withLock { $0 }, ["test-enc-1"])
        workers.stop()
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
        workers.run(on: 0) { ran.withLock { $0 = true } }
        XCTAssertTrue(ran.withLock { $0 })  // synchronous: no worker thread is left to run it
    }

    /// The calling thread's OS-level name.
    private static func threadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
    }
}
