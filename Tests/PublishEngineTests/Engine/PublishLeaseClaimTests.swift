import Clocks
import Foundation
import InMemoryStore
import PushStore
import XCTest

@testable import PublishEngine

/// A claim hands back the lease it holds; the store's declared capabilities decide which, no cast.
final class PublishLeaseClaimTests: XCTestCase {
    private func job(_ id: String) -> PublishJob {
        PublishJob(
            instanceID: "i", publishID: id, kind: .interests, targets: ["news"], payload: Data([0]),
            createdAt: Date())
    }

    func testAWholeJobIsClaimedWithAJobLeaseWithoutASplitterOnAStoreThatDoesNotShard() async throws {
        let store = InMemoryPushStore()
        XCTAssertNil(store.sharding, "the in-memory store delivers every publish whole")
        XCTAssertNil(store.queueNotices)
        _ = try await store.enqueuePublish(job("p1"))
        let before = MonotonicClock.now()
        let claim = try await PublishLease.claimNext(
            from: store, workerID: "w", leaseDuration: .seconds(30),
            preference: .oldestFirst, shardsToo: true)
        let found = try XCTUnwrap(claim)
        XCTAssertEqual(found.claimed.job.publishID, "p1")
        guard case .job(let splitter) = found.lease else { return XCTFail("\(found.lease)") }
        XCTAssertNil(splitter)
        XCTAssertNil(found.lease.shard)
        XCTAssertGreaterThanOrEqual(found.sentAt, before, "the lease counts from when the claim was sent")
        XCTAssertLessThanOrEqual(found.sentAt, MonotonicClock.now())
    }

    func testNothingClaimableAndNoShardsGiveNoClaim() async throws {
        let store = InMemoryPushStore()
        let claim = try await PublishLease.claimNext(
            from: store, workerID: "w", leaseDuration: .seconds(30),
            preference: .oldestFirst, shardsToo: true)
        XCTAssertNil(claim)
    }
}
