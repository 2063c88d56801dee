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

    /// The kernel-side name of a thread `start` starts with the body it is given (nil: it never ran).
    private static func kernelName(of start: (@escaping @Sendable () -> Void) -> Void) -> String? {
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        start {
            seen.withLock { $0 = currentKernelName() }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return seen.withLock { $0 }
    }

    func testAStartedThreadCarriesItsNameInTheKernel() {
        XCTAssertEqual(Self.kernelName { NamedThread.start("named-test-1", stackSize: 1 << 20, $0) }, "named-test-1")
    }

    func testANameLongerThanTheKernelKeepsIsCutToItsFirst15Bytes() {
        XCTAssertEqual(Self.kernelName { NamedThread.start("a-name-of-twenty-bytes", $0) }, "a-name-of-twent")
    }

    func testAPlainFoundationThreadNamedBeforeStartKeepsTheProcessName() {
        // Why `NamedThread` exists: if this starts failing, Foundation names threads itself and the kit's
        // `/proc` write is redundant.
        let name = Self.kernelName { body in
            let thread = Thread(block: body)
            thread.name = "plain-named"
            thread.start()
        }
        XCTAssertNotNil(name)
        XCTAssertNotEqual(name, "plain-named")
    }
}
