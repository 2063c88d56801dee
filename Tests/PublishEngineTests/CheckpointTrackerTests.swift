import PublishEngine
import TestSupport
import XCTest

final class CheckpointTrackerTests: XCTestCase {
    func testWatermarkWaitsForTheOldestUnansweredTarget() {
        var tracker = CheckpointTracker(resumingAfter: 0)
        for ref in [2, 5, 9] as [Int64] { tracker.submitted(ref) }
        tracker.scanned(upTo: 10)
        tracker.completed(5)
        tracker.completed(9)
        XCTAssertEqual(tracker.watermark, 0, "2 is still in flight: resuming must re-send it")
        tracker.completed(2)
        XCTAssertEqual(tracker.watermark, 10, "all answered: the scanned range (skipped refs included) is done")
        XCTAssertEqual(tracker.inFlight, 0)
    }

    func testWatermarkNeverPassesUnscannedTargets() {
        var tracker = CheckpointTracker(resumingAfter: 100)
        tracker.submitted(101)
        tracker.completed(101)
        XCTAssertEqual(tracker.watermark, 101, "a page not fully submitted yet is not scanned past its last target")
        tracker.scanned(upTo: 150)
        XCTAssertEqual(tracker.watermark, 150)
    }

    func testDuplicateAndUnknownCompletionsAreIgnored() {
        var tracker = CheckpointTracker(resumingAfter: 0)
        tracker.submitted(1)
        tracker.submitted(2)
        tracker.completed(2)
        tracker.completed(2)
        tracker.completed(77)
        XCTAssertEqual(tracker.inFlight, 1)
        XCTAssertEqual(tracker.watermark, 0)
    }

    func testRandomAnswerOrderKeepsTheInvariantOverALongRun() {
        var generator = SplitMix64(seed: 42)
        var tracker = CheckpointTracker(resumingAfter: 0)
        var inFlight: [Int64] = []
        var answered = Set<Int64>()
        var next: Int64 = 1
        for _ in 0..<20_000 {
            if inFlight.count < 64 && generator.next() % 3 != 0 {
                next += Int64(generator.next() % 3) + 1  // gaps stand for skipped (invalidated) devices
                tracker.submitted(next)
                inFlight.append(next)
                tracker.scanned(upTo: next)
            } else if !inFlight.isEmpty {
                let ref = inFlight.remove(at: Int(generator.next() % UInt64(inFlight.count)))
                tracker.completed(ref)
                answered.insert(ref)
            }
            // Invariant: nothing at or below the watermark is still in flight.
            XCTAssertTrue(inFlight.allSatisfy { $0 > tracker.watermark })
        }
        for ref in inFlight { tracker.completed(ref) }
        XCTAssertEqual(tracker.watermark, next)
    }
}
