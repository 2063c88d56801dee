import SQL
import XCTest

@testable import PostgreSQLStore
@testable import SQLiteStore

/// Released steps written once in the schema vocabulary render, byte for byte, the text both backends' step lists
/// hold (and that databases in the field have applied): the vocabulary says what a new step needs on each backend.
final class SchemaStepTests: XCTestCase {
    /// The invalidation log (SQLite step 10, PostgreSQL step 8): an id never reused, a 32-bit status, a boolean with
    /// a default, and a partial index over that boolean.
    func testTheInvalidationLogWrittenOnceRendersBothBackendsSteps() {
        let step = SchemaStep(
            .createTable(
                SchemaTable(
                    "device_invalidations",
                    columns: [
                        SchemaColumn("id", .identityNeverReused),
                        SchemaColumn("instance_id", .text),
                        SchemaColumn("device_id", .text),
                        SchemaColumn("platform", .text),
                        SchemaColumn("token_mask", .text),
                        SchemaColumn("user_id", .text, nullable: true),
                        SchemaColumn("reason", .text),
                        SchemaColumn("status", .int32),
                        SchemaColumn("provider_at", .integer, nullable: true),
                        SchemaColumn("at", .integer),
                        SchemaColumn("notified", .bool, default: .bool(false)),
                    ])),
            .createIndex(SchemaIndex("device_invalidations_feed", on: "device_invalidations", ["instance_id", "id"])),
            .createIndex(SchemaIndex("device_invalidations_at", on: "device_invalidations", ["at"])),
            .createIndex(
                SchemaIndex(
                    "device_invalidations_unnotified", on: "device_invalidations", ["id"], where: .isFalse("notified")))
        )
        XCTAssertEqual(step.sql(in: .sqlite), Schema.deviceInvalidations)
        XCTAssertEqual(step.sql(in: .postgresql), PostgreSQLSchema.deviceInvalidations)
    }

    /// The API keys (SQLite step 14, PostgreSQL step 12): a key over two columns and a column CHECK.
    func testTheAPIKeysWrittenOnceRenderBothBackendsSteps() {
        let step = SchemaStep(
            .createTable(
                SchemaTable(
                    "api_keys",
                    columns: [
                        SchemaColumn("instance_id", .text),
                        SchemaColumn("key_id", .text),
                        SchemaColumn("kind", .text, check: "kind IN ('scoped', 'beams')"),
                        SchemaColumn("label", .text),
                        SchemaColumn("scopes", .text),
                        SchemaColumn("secret_digest", .text, nullable: true),
                        SchemaColumn("sealed_secret", .text, nullable: true),
                        SchemaColumn("not_before", .integer, nullable: true),
                        SchemaColumn("expires_at", .integer, nullable: true),
                        SchemaColumn("created_at", .integer),
                        SchemaColumn("last_used_at", .integer, nullable: true),
                        SchemaColumn("revoked_at", .integer, nullable: true),
                        SchemaColumn("rotated_from", .text, nullable: true),
                    ],
                    primaryKey: ["instance_id", "key_id"])))
        XCTAssertEqual(step.sql(in: .sqlite), Schema.apiKeys)
        XCTAssertEqual(step.sql(in: .postgresql), PostgreSQLSchema.apiKeys)
    }

    /// The trace context columns (SQLite step 15, PostgreSQL step 13): two statements on SQLite, one on PostgreSQL.
    func testAddedColumnsRenderOneStatementEachOnSQLiteAndOneOnPostgreSQL() {
        let step = SchemaStep(
            .addColumns(
                table: "publish_jobs",
                [
                    SchemaColumn("trace_parent", .text, nullable: true),
                    SchemaColumn("trace_state", .text, nullable: true),
                ]
            ))
        XCTAssertEqual(step.sql(in: .sqlite), Schema.publishTraceContext)
        XCTAssertEqual(step.sql(in: .postgresql), PostgreSQLSchema.publishTraceContext)
    }

    /// The provider tokens (SQLite step 4, a `WITHOUT ROWID` table; on PostgreSQL part of step 1, a plain table).
    func testWithoutRowIDIsRenderedOnlyOnSQLite() {
        let step = SchemaStep(
            .createTable(
                SchemaTable(
                    "apns_provider_tokens",
                    columns: [
                        SchemaColumn("team_id", .text),
                        SchemaColumn("key_id", .text),
                        SchemaColumn("jwt", .text),
                        SchemaColumn("issued_at", .integer),
                        SchemaColumn("updated_at", .integer),
                    ],
                    primaryKey: ["team_id", "key_id"], withoutRowID: true)))
        XCTAssertEqual(step.sql(in: .sqlite), Schema.providerTokens)
        XCTAssertTrue(PostgreSQLSchema.version1.contains(step.sql(in: .postgresql)))
    }
}
