import Dispatch
import Foundation
import Locking
import PostgreSQLStore
import PushStore
import StoreSQL
import TestSupport
import XCTest

/// A read's statements see one snapshot (`SQLStoreBackend.read`): what other connections commit between two of them
/// is seen by neither or, in a later read, by both.
final class SnapshotReadTests: PostgreSQLTestCase {
    /// The status reads the publish's counters, then its state. A run's last checkpoint and its finish committed
    /// between the two used to show the publish `finished` with none of its counts (a one-device publish under load
    /// in `test_payload_limit_is_exactly_4096_bytes`): the read must show it as it was before both.
    func testAStatusReadWhileTheLastCheckpointAndTheFinishCommitShowsTheJobBeforeBothNotFinishedWithoutCounts()
        async throws
    {
        let store = try await openNode()
        let publishID = "pubid-snapshot"
        let id = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: publishID, kind: .interests, targets: ["news"], payload: Data(),
                createdAt: now))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(600), now: now)
        XCTAssertEqual(claimed?.id, id)
        let counters: PublishCounters = [.targets: 1, .failed(.apns, reason: "PayloadTooLarge"): 1]
        let at = now
        let failure = Locked<String?>(nil)
        // On other connections, while the read waits between its statements: the run's end as the runner writes it.
        let endRun: @Sendable () -> Void = {
            let done = DispatchSemaphore(value: 0)
            Task {
                defer { done.signal() }
                do {
                    try await store.checkpoint(
                        id, workerID: "w1", cursor: 1, counters: counters, deviceResults: [])
                    try await store.finishJob(
                        id, workerID: "w1", state: .finished, targetsTotal: 1, summary: nil, now: at)
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            done.wait()
        }
        let instance = self.instance
        let during = try await store.read { connection in
            try PublishQueueSQL.status(
                instanceID: instance, publishID: publishID, schema: PostgreSQLPushStore.publishSchema,
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
