import Foundation
import PushStore
import SQLiteStore
import XCTest

/// The exclusive store (`Configuration.exclusive`, what the server opens): one holder per database file, and the
/// leases found at open belong to a process that is gone.
final class DatabaseLockTests: StoreTestCase {
    func exclusive() -> SQLitePushStore.Configuration {
        var configuration = configuration()
        configuration.exclusive = true
        return configuration
    }

    func testASecondExclusiveOpenOfTheSameDatabaseFailsBusyUntilTheFirstCloses() async throws {
        let first = try await SQLitePushStore.open(exclusive())
        do {
            _ = try await SQLitePushStore.open(exclusive())
            XCTFail("a second store opened the database the first holds")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .busy)
            XCTAssertTrue(error.detail.contains("store.sqlite.lock"), error.detail)
        }
        try await first.close()
        let again = try await SQLitePushStore.open(exclusive())
        try await again.close()
    }

    func testExclusiveOpenMakesALeaseLeftRunningClaimableAtOnce() async throws {
        let dead = try await openStore()
        let id = try await dead.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p", kind: .interests,
                targets: ["news"], payload: Data(), createdAt: clock.now))
        let held = try await dead.claimJob(workerID: "node-dead-1", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertEqual(held?.id, id)
        try await dead.close()

        // A second later, well inside the dead process's 30 s lease.
        clock.advance(1)
        let restarted = try await SQLitePushStore.open(exclusive())
        let claimed = try await restarted.claimJob(workerID: "node-new-2", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertEqual(claimed?.id, id)
        XCTAssertEqual(claimed?.attempt, 2)
        try await restarted.close()
    }

    func testAStoreThatIsNotExclusiveLeavesLeasesAlone() async throws {
        let dead = try await openStore()
        _ = try await dead.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p", kind: .interests,
                targets: ["news"], payload: Data(), createdAt: clock.now))
        _ = try await dead.claimJob(workerID: "node-dead-1", leaseDuration: .seconds(30), now: clock.now)
        try await dead.close()
        clock.advance(1)
        let other = try await openStore()
        let claimed = try await other.claimJob(workerID: "node-other", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertNil(claimed, "without the lock nothing proves the lease holder is gone")
        try await other.close()
    }
}
