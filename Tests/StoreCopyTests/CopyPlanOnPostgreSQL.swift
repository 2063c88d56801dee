import Foundation
import PostgreSQLStore
import StoreCopy
import TestSupport
import XCTest

/// `CopyPlanTests`' schema check against the schema PostgreSQL's migrator creates (a throwaway cluster; the class
/// name puts it in the PostgreSQL tier of `make test`).
final class CopyPlanOnPostgreSQL: XCTestCase {
    func testEveryTableAndColumnOfAMigratedPostgreSQLDatabaseIsCopiedOrSkipped() async throws {
        guard PostgreSQLCluster.isInstalled else {
            if PostgreSQLCluster.isRequired { XCTFail("PostgreSQL is required in CI") }
            throw XCTSkip("PostgreSQL is not installed")
        }
        let cluster = try PostgreSQLCluster.shared()
        let database = try cluster.createDatabase(prefix: "plan")
        defer { try? cluster.dropDatabase(database) }
        let connection = cluster.connectionString(database: database)
        let store = try await PostgreSQLPushStore.open(PostgreSQLPushStore.Configuration(connectionString: connection))
        try await store.close()
        let side = try PostgreSQLSide(connectionString: connection, asSource: true)
        XCTAssertEqual(try side.schemaVersion().found, try side.schemaVersion().newest)
        try assertEveryTableAndColumnHandled(side)
    }
}
