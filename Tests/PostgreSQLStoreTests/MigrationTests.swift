import Foundation
import PushStore
import XCTest

@testable import PostgreSQLStore

final class PostgreSQLMigrationTests: PostgreSQLTestCase {
    func testNodesStartingTogetherApplyEachMigrationOnce() async throws {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        let stores = try await withThrowingTaskGroup(of: PostgreSQLPushStore.self) { [configuration] group in
            for _ in 0..<4 { group.addTask { try await PostgreSQLPushStore.open(configuration) } }
            return try await group.reduce(into: [PostgreSQLPushStore]()) { $0.append($1) }
        }
        XCTAssertEqual(try scalar("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations"),
                       (1...PostgreSQLSchema.migrations.count).map(String.init).joined(separator: ","))
        for store in stores { try await store.close() }
    }

    func testRefusesADatabaseMigratedByANewerProgram() async throws {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        let newer = PostgreSQLSchema.migrations.count + 1
        try cluster.sql("INSERT INTO schema_migrations (version) VALUES (\(newer))", database: database)
        do {
            _ = try await openNode(poolSize: 1)
            XCTFail("opened a database from the future")
        } catch {
            XCTAssertEqual(error as? PushStoreError,
                           .unsupportedSchemaVersion(found: newer, newestKnown: PostgreSQLSchema.migrations.count))
        }
    }

    func testAppliesOnlyTheMissingSteps() async throws {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        let first = try await PostgreSQLPushStore.open(
            configuration, migrator: PostgreSQLMigrator(migrations: ["CREATE TABLE step_one (a int)"]))
        try await first.close()
        let second = try await PostgreSQLPushStore.open(
            configuration,
            migrator: PostgreSQLMigrator(migrations: ["CREATE TABLE step_one (a int)", "CREATE TABLE step_two (b int)"]))
        try await second.close()
        XCTAssertEqual(try scalar("SELECT count(*) FROM schema_migrations"), "2")
        XCTAssertEqual(try scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('step_one', 'step_two')"), "2")
    }
}
