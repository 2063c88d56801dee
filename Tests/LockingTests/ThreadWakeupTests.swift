import Dispatch
import Foundation
import Glibc
import Locking
import XCTest

/// `ThreadWakeup`: what ends a dedicated thread's wait. Plain threads and a pipe, no database.
final class ThreadWakeupTests: XCTestCase {
    func testASignalFromAnotherThreadEndsAWaitThatHasNoTimeout() {
        let wakeup = ThreadWakeup()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { wakeup.signal() }
        XCTAssertEqual(onThread { wakeup.wait() }, .signalled)
        XCTAssertEqual(wakeup.wait(timeout: .zero), .signalled, "a signal stays: later waits end at once too")
    }

    func testAReadableDescriptorEndsTheWaitAndASignalWinsOverIt() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        let wakeup = ThreadWakeup()
        XCTAssertEqual(wakeup.wait(orReadable: ends[0], timeout: .milliseconds(20)), .timedOut)
        XCTAssertEqual(write(ends[1], "x", 1), 1)
        XCTAssertEqual(wakeup.wait(orReadable: ends[0], timeout: .seconds(10)), .readable)
        wakeup.signal()
        XCTAssertEqual(
            wakeup.wait(orReadable: ends[0], timeout: .seconds(10)), .signalled,
            "a stopping thread stops even while its socket has data")
    }

    func testTimeoutsRoundUpToWholeMillisecondsAndSaturate() {
        XCTAssertEqual(ThreadWakeup.milliseconds(.zero), 0)
        XCTAssertEqual(ThreadWakeup.milliseconds(.microseconds(1)), 1, "a short wait must not become a busy 0")
        XCTAssertEqual(ThreadWakeup.milliseconds(.milliseconds(1500)), 1500)
        XCTAssertEqual(ThreadWakeup.milliseconds(.seconds(-3)), 0)
        XCTAssertEqual(ThreadWakeup.milliseconds(.seconds(Int64.max / 2)), Int32.max)
    }
}
