import Foundation
import PushStore
import XCTest

@testable import SQLiteStore

/// The indexes the target stream and the claim are built on: a page reads index ranges, never sorts the
/// subscribers; a claim never reads the whole backlog.
final class QueryPlanTests: StoreTestCase {
    func testInterestStreamReadsThePrimaryKeyRangeWithoutSorting() async throws {
        let store = try await openStore()
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        var plan: [String] = []
        try connection.query("EXPLAIN QUERY PLAN " + SQLitePushStore.interestStreamSQL(0), [.integer(1), .integer(0)]) {
            plan.append($0.text(3))
        }
        XCTAssertEqual(plan.count, 1, "\(plan)")
        XCTAssertTrue(plan[0].contains("USING PRIMARY KEY (interest_id=? AND device_id>?)"), "\(plan)")
        XCTAssertFalse(plan.joined().contains("TEMP B-TREE"), "\(plan)")
    }

    /// A claim that ranks instances by their runs on the node reads publish_jobs only through seeks of
    /// `publish_jobs_open_by_instance` (the next instance, each instance's oldest claimable job) and sorts nothing:
    /// sorting every open job cost 13-23 ms per claim behind a backlog of 33,000 publishes, and a statement that
    /// sorted the candidates itself built three temporary tables per claim.
    func testRankedClaimSeeksEachInstanceInsteadOfSortingTheOpenJobs() async throws {
        let store = try await openStore()
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        for (sql, bound) in [
            (SQLitePushStore.firstOpenInstanceSQL, false), (SQLitePushStore.nextOpenInstanceSQL, true),
        ] {
            var plan: [String] = []
            try connection.query("EXPLAIN QUERY PLAN " + sql, bound ? [.integer(0), .text("a")] : [.integer(0)]) {
                plan.append($0.text(3))
            }
            let reads = plan.filter { $0.contains("publish_jobs") }
            XCTAssertEqual(reads.count, 2, "\(plan)")
            if bound {
                XCTAssertTrue(
                    reads.contains { $0.hasPrefix("SEARCH") && $0.hasSuffix("open_by_instance (instance_id>?)") },
                    "\(plan)")
            }
            XCTAssertTrue(
                reads.contains { $0.hasPrefix("SEARCH") && $0.hasSuffix("open_by_instance (instance_id=?)") }, "\(plan)"
            )
            XCTAssertTrue(reads.allSatisfy { $0.contains("USING INDEX publish_jobs_open_by_instance") }, "\(plan)")
            XCTAssertFalse(plan.joined().contains("TEMP B-TREE"), "\(plan)")
        }
    }

    /// The claim and a job's INSERT build no temporary table: no `RETURNING` (SQLite buffers its rows in one) and
    /// no CHECK on a list of three or more values (SQLite looks the value up in a table it fills per statement).
    func testClaimAndEnqueueOpenNoTemporaryTable() async throws {
        let store = try await openStore()
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        let statements = [
            SQLitePushStore.claimUpdateSQL, SQLitePushStore.claimedJobSQL,
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
            VALUES ('i', 'p', 'interests', '[]', x'', 0)
            """,
            "UPDATE publish_jobs SET state = 'finished' WHERE id = 1",
            "INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at) "
                + "VALUES ('d', 'i', 'apns', 't', 'sandbox', 0, 0)",
        ]
        for sql in statements {
            var opcodes: [String] = []
            try connection.query("EXPLAIN " + sql) { opcodes.append($0.text(1)) }
            XCTAssertFalse(opcodes.isEmpty, sql)
            XCTAssertFalse(opcodes.contains("OpenEphemeral"), "a temporary table in \(sql)")
        }
    }
}
