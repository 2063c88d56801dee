import Foundation
import Locking
import PushStore
import XCTest

@testable import PostgreSQLStore

/// `Configuration.nodeID`: one live store per node identity, and the identity's leases taken over at open.
final class NodeIdentityTests: PostgreSQLTestCase {
    func openNode(id: String, wait: Duration = .seconds(5)) async throws -> PostgreSQLPushStore {
        try await openNode(poolSize: 2, nodeID: id, nodeIDWait: wait)
    }

    func job(_ publishID: String) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: publishID, kind: .interests, targets: ["news"], payload: Data(),
            createdAt: now)
    }

    func testASecondStoreUnderALiveIdentityFailsBusyAndOpensOnceTheFirstCloses() async throws {
        let first = try await openNode(id: "node-a")
        do {
            _ = try await openNode(id: "node-a", wait: .milliseconds(300))
            XCTFail("two live stores shared one node identity")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .busy)
            XCTAssertTrue(error.detail.contains("node-a"), error.detail)
        }
        let other = try await openNode(id: "node-b")
        try await other.close()
        try await first.close()
        let again = try await openNode(id: "node-a")
        try await again.close()
    }

    func testOpeningUnderAnIdentityExpiresItsOwnLeasesAndNoOneElses() async throws {
        let before = try await openNode()
        let mine = try await before.enqueuePublish(job("mine"))
        let theirs = try await before.enqueuePublish(job("theirs"))
        let claimedMine = try await before.claimJob(workerID: "node-a", leaseDuration: .seconds(30), now: now)
        let claimedTheirs = try await before.claimJob(workerID: "node-b", leaseDuration: .seconds(30), now: now)
        XCTAssertEqual([claimedMine?.id, claimedTheirs?.id], [mine, theirs])
        try await before.close()

        // A second later, inside both 30 s leases: node-a's previous process is gone (nothing holds its identity).
        let later = now.addingTimeInterval(1)
        let restarted = try await openNode(id: "node-a")
        let claimed = try await restarted.claimJob(workerID: "node-a", leaseDuration: .seconds(30), now: later)
        XCTAssertEqual(claimed?.id, mine)
        XCTAssertEqual(claimed?.attempt, 2)
        let next = try await restarted.claimJob(workerID: "node-a", leaseDuration: .seconds(30), now: later)
        XCTAssertNil(next, "node-b's lease is not node-a's to take")
        try await restarted.close()
    }
}

/// The dedicated connection threads (a LISTEN, a node lock) stop when told, not at their next timeout.
final class ConnectionThreadStopTests: PostgreSQLTestCase {
    func testStoppingAThreadThatWaitsOnItsSocketTakesEffectAtOnce() async throws {
        let listening = CountdownLatch(count: 1)
        let ended = Locked<(any Error)?>(nil)
        let connectionString = self.connectionString
        // An interval far beyond the test's patience: a thread that looked at a stop flag between timed waits on
        // its socket would take this long to stop.
        let thread = PGConnectionThread(name: "test-listen", interval: .seconds(120)) { thread in
            thread.connectAgainUntilStopped(connectionString: connectionString) { connection in
                try connection.execute("LISTEN \"test_stop\"")
                listening.arrive(nil)
                try thread.watch(connection, closedMessage: "closed") { _ in }
                return true
            } failed: { error in
                ended.withLock { $0 = error }
                listening.arrive(error)
                return false
            }
        }
        let errors = await listening.wait()
        XCTAssertTrue(errors.isEmpty, "\(errors)")
        // Long enough for a wait on the socket to begin, and for a thread that ended on its own to show it.
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertNil(ended.withLock { $0 }, "the thread ended before it was stopped")
        let started = ContinuousClock.now
        await thread.stopAndWait()
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(30))
    }
}
