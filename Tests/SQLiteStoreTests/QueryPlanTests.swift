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
    /// `publish_jobs_open_by_instance` (the next instance, each instance's oldest claimable job) and sorts only those
    /// candidates: sorting every open job cost 13-23 ms per claim behind a backlog of 33,000 publishes.
    func testRankedClaimSeeksEachInstanceInsteadOfSortingTheOpenJobs() async throws {
        let store = try await openStore()
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        for onlyAbsent in [false, true] {
            let preference = ClaimPreference(runsByInstance: ["a": 3, "b": 1], onlyAbsentInstances: onlyAbsent)
            let (sql, parameters) = SQLitePushStore.claimQuery(now: 0, preference: preference)
            var plan: [String] = []
            try connection.query("EXPLAIN QUERY PLAN " + sql, parameters) { plan.append($0.text(3)) }
            let reads = plan.filter { $0.contains("publish_jobs") }
            XCTAssertEqual(reads.count, 3, "\(plan)")
            XCTAssertTrue(
                reads.contains { $0.hasPrefix("SEARCH") && $0.hasSuffix("open_by_instance (instance_id>?)") }, "\(plan)"
            )
            XCTAssertTrue(
                reads.contains { $0.hasPrefix("SEARCH") && $0.hasSuffix("open_by_instance (instance_id=?)") }, "\(plan)"
            )
            XCTAssertTrue(reads.allSatisfy { $0.contains("USING INDEX publish_jobs_open_by_instance") }, "\(plan)")
            XCTAssertEqual(
                plan.filter { $0.contains("TEMP B-TREE") }.count, 1, "only the candidates are sorted: \(plan)")
        }
    }
}
