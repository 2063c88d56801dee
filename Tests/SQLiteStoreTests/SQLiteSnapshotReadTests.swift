import Dispatch
import Foundation
import Locking
import PushStore
import SQLiteStore
import StoreSQL
import TestSupport
import XCTest

/// A read's statements see one snapshot (`SQLStoreBackend.read`), as on PostgreSQL (its `SnapshotReadTests`): what
/// the writer commits between two of them is seen by neither or, in a later read, by both.
final class SQLiteSnapshotReadTests: StoreTestCase {
    /// The status reads the publish's counters, then its state: a run's last checkpoint and its finish committed
    /// between the two must not show the publish `finished` with none of its counts.
    func testAStatusReadWhileTheLastCheckpointAndTheFinishCommitShowsTheJobBeforeBothNotFinishedWithoutCounts()
        async throws
    {
        let store = try await openStore()
        let publishID = "pubid-snapshot"
        let now = clock.now
        let id = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: publishID, kind: .interests, targets: ["news"], payload: Data(),
                createdAt: now))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(600), now: now)
        XCTAssertEqual(claimed?.id, id)
        let counters: PublishCounters = [.targets: 1, .failed(.apns, reason: "PayloadTooLarge"): 1]
        let failure = Locked<String?>(nil)
        // Through the writer, while the read waits between its statements: the run's end as the runner writes it.
        let endRun: @Sendable () -> Void = {
            let done = DispatchSemaphore(value: 0)
            Task {
                defer { done.signal() }
                do {
                    try await store.checkpoint(
                        id, workerID: "w1", cursor: 1, counters: counters, deviceResults: [])
                    try await store.finishJob(
                        id, workerID: "w1", state: .finished, targetsTotal: 1, summary: nil, now: now)
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            done.wait()
        }
        let instance = self.instance
        let during = try await store.read { connection in
            try PublishQueueSQL.status(
                instanceID: instance, publishID: publishID, schema: SQLitePushStore.publishSchema,
                on: AfterFirstRead(connection, then: endRun))
        }
        XCTAssertNil(failure.withLock { $0 }, "the run's end was not written")
        let before = try XCTUnwrap(during)
        XCTAssertEqual(before.state, .running, "the state is read after the finish committed")
        XCTAssertEqual(before.counters, [:])
        let after = try await store.publishStatus(instanceID: instance, publishID: publishID)
        XCTAssertEqual(after?.state, .finished)
        XCTAssertEqual(after?.counters, counters)
        try await store.close()
    }
}
