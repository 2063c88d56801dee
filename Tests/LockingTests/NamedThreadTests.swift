import Dispatch
import Foundation
import Locking
import XCTest

/// `NamedThread`: the name reaches the kernel (what `top -H` and `perf` read), which a `Thread.name` set before
/// `start()` does not on this Foundation.
final class NamedThreadTests: XCTestCase {
    /// The calling thread's kernel-side name.
    private static func currentKernelName() -> String {
        let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .newlines)
    }

    func testAStartedThreadCarriesItsNameInTheKernel() {
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        NamedThread.start("named-test-1", stackSize: 1 << 20) {
            seen.withLock { $0 = Self.currentKernelName() }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.withLock { $0 }, "named-test-1")
    }

    func testANameLongerThanTheKernelKeepsIsCutToItsFirst15Bytes() {
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        NamedThread.start("a-name-of-twenty-bytes") {
            seen.withLock { $0 = Self.currentKernelName() }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.withLock { $0 }, "a-name-of-twent")
    }

    func testAPlainFoundationThreadNamedBeforeStartKeepsTheProcessName() {
        // Why `NamedThread` exists: if this starts failing, Foundation names threads itself and the kit's
        // `/proc` write is redundant.
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            seen.withLock { $0 = Self.currentKernelName() }
            done.signal()
        }
        thread.name = "plain-named"
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNotEqual(seen.withLock { $0 }, "plain-named")
    }
}
