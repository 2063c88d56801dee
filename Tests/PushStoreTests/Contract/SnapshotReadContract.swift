import Dispatch
import Foundation
import Locking
import PushStore
import StoreSQL
import TestSupport
import Testing

/// A read's statements see one snapshot (`SQLStoreBackend.read`): what other connections commit between two of them
/// is seen by neither or, in a later read, by both. The in-memory store reads under its lock, so nothing can commit
/// between two of its reads' steps; it has nothing to show here.
final class SnapshotReadContract: StoreContract {
    /// The status reads the publish's counters, then its state. A run's last checkpoint and its finish committed
    /// between the two once showed the publish `finished` with none of its counts on PostgreSQL (a one-device publish
    /// under load in `test_payload_limit_is_exactly_4096_bytes`): the read must show it as it was before both.
    @Test(arguments: ContractBackend.selected)
    func testAStatusReadWhileTheLastCheckpointAndTheFinishCommitShowsTheJobBeforeBoth(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        if let sql = store as? any SQLStoreBackend & PushStorage {
            try await statusReadAcrossTheRunsEnd(sql)
        }
        try await store.close()
    }

    private func statusReadAcrossTheRunsEnd(_ store: some SQLStoreBackend & PushStorage) async throws {
        let publishID = "pubid-snapshot"
        let now = clock.now
        let id = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: publishID, kind: .interests, targets: ["news"], payload: Data(),
                createdAt: now))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(600), now: now)
        #expect(claimed?.id == id)
        let counters: PublishCounters = [.targets: 1, .failed(.apns, reason: "PayloadTooLarge"): 1]
        let failure = Locked<String?>(nil)
        // Through other connections (PostgreSQL) or the writer (SQLite), while the read waits between its
        // statements: the run's end as the runner writes it.
        let endRun: @Sendable () -> Void = {
            let done = DispatchSemaphore(value: 0)
            Task {
                defer { done.signal() }
                do {
                    try await store.checkpoint(id, workerID: "w1", cursor: 1, counters: counters, deviceResults: [])
                    try await store.finishJob(
                        id, workerID: "w1", state: .finished, targetsTotal: 1, summary: nil, now: now)
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            done.wait()
        }
        let instance = self.instance
        let schema = type(of: store).publishSchema
        let during = try await store.read { connection in
            try PublishQueueSQL.status(
                instanceID: instance, publishID: publishID, schema: schema,
                on: AfterFirstRead(connection, then: endRun))
        }
        #expect(failure.withLock { $0 } == nil, "the run's end was not written")
        let before = try #require(during)
        #expect(before.state == .running, "the state is read after the finish committed")
        #expect(before.counters == [:])
        let after = try await store.publishStatus(instanceID: instance, publishID: publishID)
        #expect(after?.state == .finished)
        #expect(after?.counters == counters)
    }
}
