import Foundation
import PushStore
import XCTest

@testable import PublishEngine

/// What `PublishRun.drain` hands a checkpoint: the answered refs above the watermark, with the runs earlier
/// checkpoints wrote continued from their first ref, and the `.targets` counted since the last drain.
final class PublishRunDrainTests: XCTestCase {
    private func makeRun() -> PublishRun {
        let job = PublishJob(
            instanceID: "i", publishID: "p", kind: .channels, targets: ["c"], payload: Data(), createdAt: Date())
        return PublishRun(
            claimed: ClaimedJob(
                id: PublishJobID(rawValue: 1), job: job, cursor: 0, counters: [:], attempt: 1,
                leaseExpiresAt: Date()))
    }

    private func answer(_ refs: Int64..., in run: PublishRun) {
        for ref in refs { run.completedChannel(ref: ref, counters: [.channelsAccepted: 1]) }
    }

    func testARunThatContinuesOneAnEarlierCheckpointWroteIsSentFromItsFirstRef() {
        let run = makeRun()
        for ref in Int64(1)...10 { run.submittedChannel(ref: ref) }
        answer(3, 2, in: run)
        var batch = run.drain()
        XCTAssertEqual(batch.cursor, 0)
        XCTAssertEqual(batch.answered.sorted(), [2, 3])
        answer(5, 4, 7, in: run)
        batch = run.drain()
        XCTAssertEqual(batch.answered.sorted(), [2, 3, 4, 5, 7], "4–5 continue 2–3; 7 starts a run of its own")
        answer(8, in: run)
        batch = run.drain()
        XCTAssertEqual(batch.answered.sorted(), [7, 8])
        answer(10, in: run)
        batch = run.drain()
        XCTAssertEqual(batch.answered.sorted(), [10], "9 is missing: nothing to continue")
    }

    func testRefsTheWatermarkPassedAreNeitherSentNorContinued() {
        let run = makeRun()
        for ref in Int64(1)...6 { run.submittedChannel(ref: ref) }
        answer(2, 3, in: run)
        _ = run.drain()
        answer(1, 5, in: run)
        let batch = run.drain()
        XCTAssertEqual(batch.cursor, 3)
        XCTAssertEqual(batch.answered.sorted(), [5], "2–3 are at or below the watermark now; 4 is missing")
    }

    func testTheTargetsCounterHoldsTheResultsSinceTheLastDrain() {
        let run = makeRun()
        for ref in Int64(1)...5 { run.submittedChannel(ref: ref) }
        answer(1, 2, 3, in: run)
        var batch = run.drain()
        XCTAssertEqual(batch.counters[.targets], 3)
        XCTAssertEqual(batch.counters[.channelsAccepted], 3)
        batch = run.drain()
        XCTAssertNil(batch.counters[.targets], "nothing answered since")
        answer(4, in: run)
        run.restore(run.drain())
        answer(5, in: run)
        batch = run.drain()
        XCTAssertEqual(batch.counters[.targets], 2, "a restored batch's targets come back with it")
    }
}
