import Locking
import XCTest

/// `FIFO`: order across compactions, the front insert, batches, and equality of what is queued.
final class FIFOTests: XCTestCase {
    func testElementsLeaveInArrivalOrderAcrossCompactions() {
        var queue = FIFO<Int>(compactAfter: 16)
        var popped: [Int] = []
        for value in 0..<300 { queue.append(value) }
        for _ in 0..<200 { popped.append(queue.popFirst()!) }
        queue.append(contentsOf: 300..<500)
        XCTAssertEqual(queue.count, 300)
        XCTAssertEqual(queue.first, 200)
        XCTAssertEqual(queue.last, 499)
        while let value = queue.popFirst() { popped.append(value) }
        XCTAssertEqual(popped, Array(0..<500))
        XCTAssertTrue(queue.isEmpty)
        XCTAssertNil(queue.first)
        XCTAssertNil(queue.last)
    }

    func testPrependGoesFirstAndBatchesKeepTheOrder() {
        var queue = FIFO<Int>()
        queue.append(contentsOf: [1, 2, 3])
        XCTAssertEqual(queue.popFirst(), 1)
        queue.prepend(0)  // into the consumed slot
        queue.prepend(-1)  // at the front of the array
        XCTAssertEqual(queue.popFirst(max: 3), [-1, 0, 2])
        XCTAssertEqual(queue.popFirst(max: 10), [3])
        XCTAssertEqual(queue.popFirst(max: 10), [])
    }

    func testEqualityComparesWhatIsQueuedNotWhatWasConsumed() {
        var a = FIFO<Int>()
        a.append(contentsOf: [9, 1, 2])
        _ = a.popFirst()
        var b = FIFO<Int>()
        b.append(contentsOf: [1, 2])
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.removeAll(), [1, 2])
        XCTAssertNotEqual(a, b)
    }
}
