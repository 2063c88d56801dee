import Foundation
import XCTest

@testable import SQLiteStore

/// The indexes the target stream is built on: a page reads index ranges, never sorts the subscribers.
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
}
