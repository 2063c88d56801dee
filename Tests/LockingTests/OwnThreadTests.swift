import Dispatch
import Foundation
import Locking
import XCTest

/// `OwnThread.run`: the body runs on a thread of its own, and its value or error reaches the task.
final class OwnThreadTests: XCTestCase {
    private struct Refused: Error, Equatable {}

    func testTheBodysValueIsReturnedFromAThreadThatIsNotTheMainThread() async throws {
        let seen = try await OwnThread.run(named: "own-thread-test") { () -> (Bool, Int) in
            (Thread.isMainThread, 6 * 7)
        }
        XCTAssertFalse(seen.0)
        XCTAssertEqual(seen.1, 42)
    }

    func testTwoBodiesThatBlockUntilTheOtherRunsBothFinish() async throws {
        // Each body blocks its thread until the other body has run: only two threads of their own finish both.
        let first = DispatchSemaphore(value: 0)
        let second = DispatchSemaphore(value: 0)
        async let a = OwnThread.run(named: "own-thread-a") { () -> Bool in
            first.signal()
            return second.wait(timeout: .now() + 10) == .success
        }
        async let b = OwnThread.run(named: "own-thread-b") { () -> Bool in
            second.signal()
            return first.wait(timeout: .now() + 10) == .success
        }
        let (aSaw, bSaw) = try await (a, b)
        XCTAssertTrue(aSaw, "the first body never saw the second run")
        XCTAssertTrue(bSaw, "the second body never saw the first run")
    }

    func testAnErrorThrownByTheBodyIsThrownToTheCaller() async {
        do {
            _ = try await OwnThread.run(named: "own-thread-error") { () throws -> Int in throw Refused() }
            XCTFail("the body's error must reach the caller")
        } catch {
            XCTAssertEqual(error as? Refused, Refused())
        }
    }
}
