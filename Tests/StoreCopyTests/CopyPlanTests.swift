import Foundation
import SQLiteStore
import TestSupport
import XCTest

@testable import StoreCopy

/// The table plan against the schemas the migrators really create: every table and every column of both backends is
/// copied or deliberately skipped, so a migration that adds one fails here until the plan handles it.
final class CopyPlanTests: XCTestCase {
    func testEveryTableAndColumnOfAMigratedSQLiteDatabaseIsCopiedOrSkipped() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("plan-\(UUID().uuidString).sqlite")
            .path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try await SQLitePushStore.open(SQLitePushStore.Configuration(path: path))
        try await store.close()
        let side = try SQLiteSide(path: path, asSource: true)
        XCTAssertEqual(try side.schemaVersion().found, try side.schemaVersion().newest)
        try assertEveryTableAndColumnHandled(side)
    }

    func testATableOrColumnTheSchemaGainsIsReportedAsUnhandled() {
        XCTAssertEqual(
            CopyPlan.unhandledTables(["devices", "nodes", "device_tags"], backend: .postgresql), ["device_tags"])
        XCTAssertEqual(CopyPlan.unhandledTables(["nodes"], backend: .sqlite), ["nodes"])
        let devices = CopyPlan.tables.first { $0.name == "devices" }!.columns.map(\.name)
        XCTAssertEqual(CopyPlan.unhandledColumns(devices + ["locale"], table: "devices", backend: .sqlite), ["locale"])
        XCTAssertNil(CopyPlan.unhandledColumns(["x"], table: "schema_migrations", backend: .postgresql))
    }

    func testPublishStatesOutsideSQLitesCheckAreStoredAsFinishedWithEndedAs() {
        let jobs = CopyPlan.tables.first { $0.name == "publish_jobs" }!
        XCTAssertTrue(jobs.sqlite.select.contains("COALESCE(ended_as, state)"))
        let insert = jobs.sqlite.inserts[0]
        let stateIndex = jobs.columns.firstIndex { $0.name == "state" }! + 1
        XCTAssertTrue(
            insert.contains(
                "CASE WHEN ?\(stateIndex) IN ('cancelled', 'expired') THEN 'finished' ELSE ?\(stateIndex) END"),
            insert)
        XCTAssertEqual(SQLiteSide.highestParameter(insert), jobs.columns.count)
    }

    func testPostgreSQLReadsTextKeysInByteOrderLikeSQLite() {
        let events = CopyPlan.tables.first { $0.name == "events" }!
        XCTAssertTrue(
            events.postgresqlCopyOut.hasSuffix(
                "ORDER BY instance_id COLLATE \"C\", publish_id COLLATE \"C\", kind, device_id COLLATE \"C\") TO STDOUT"
            ),
            events.postgresqlCopyOut)
    }
}
