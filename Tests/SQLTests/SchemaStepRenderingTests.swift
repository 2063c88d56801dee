import Foundation
import SQL
import XCTest

/// What the schema vocabulary spells per dialect beyond the released steps `SchemaStepTests` (StoreCopyTests)
/// compares it with: keys on one column, references, defaults quoted as literals, byte order and boolean conditions.
final class SchemaStepRenderingTests: XCTestCase {
    private let notes = SchemaTable(
        "notes",
        columns: [
            SchemaColumn("id", .identity),
            SchemaColumn("device_id", .integer, references: "devices (id) ON DELETE CASCADE"),
            SchemaColumn("name", .text, unique: true, byteOrder: true),
            SchemaColumn("body", .blob, default: .blob(Data([0x00, 0xab]))),
            SchemaColumn("state", .text, default: .text("it's new"), check: "state IN ('it''s new', 'old')"),
            SchemaColumn("pinned", .bool, default: .bool(true)),
            SchemaColumn("score", .real, nullable: true),
        ],
        unique: [["device_id", "name"]], checks: ["score >= 0"])

    func testATableRendersEachColumnsTypeAndDefaultInItsDialect() {
        XCTAssertEqual(
            SchemaStep(.createTable(notes)).sql(in: .sqlite),
            """
            CREATE TABLE notes (
                id INTEGER PRIMARY KEY,
                device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                name TEXT NOT NULL UNIQUE,
                body BLOB NOT NULL DEFAULT X'00ab',
                state TEXT NOT NULL DEFAULT 'it''s new' CHECK (state IN ('it''s new', 'old')),
                pinned INTEGER NOT NULL DEFAULT 1,
                score REAL,
                UNIQUE (device_id, name),
                CHECK (score >= 0)
            );
            """)
        XCTAssertEqual(
            SchemaStep(.createTable(notes)).sql(in: .postgresql),
            """
            CREATE TABLE notes (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                name text COLLATE "C" NOT NULL UNIQUE,
                body bytea NOT NULL DEFAULT '\\x00ab',
                state text NOT NULL DEFAULT 'it''s new' CHECK (state IN ('it''s new', 'old')),
                pinned boolean NOT NULL DEFAULT true,
                score double precision,
                UNIQUE (device_id, name),
                CHECK (score >= 0)
            );
            """)
    }

    func testAKeyOnOneColumnWritesNoNotNull() {
        let table = SchemaTable("stored", columns: [SchemaColumn("id", .text, primaryKey: true)], withoutRowID: true)
        XCTAssertEqual(
            SchemaStep(.createTable(table)).sql(in: .sqlite),
            "CREATE TABLE stored (\n    id TEXT PRIMARY KEY\n) WITHOUT ROWID;")
        XCTAssertEqual(
            SchemaStep(.createTable(table)).sql(in: .postgresql), "CREATE TABLE stored (\n    id text PRIMARY KEY\n);")
    }

    func testUniqueAndPartialIndexesSpellBooleanConditionsPerDialect() {
        let step = SchemaStep(
            .createIndex(
                SchemaIndex("notes_pinned", on: "notes", ["device_id", "id"], unique: true, where: .isTrue("pinned"))),
            .createIndex(SchemaIndex("notes_scored", on: "notes", ["score"], where: "score IS NOT NULL")))
        XCTAssertEqual(
            step.sql(in: .sqlite),
            """
            CREATE UNIQUE INDEX notes_pinned ON notes (device_id, id) WHERE pinned = 1;
            CREATE INDEX notes_scored ON notes (score) WHERE score IS NOT NULL;
            """)
        XCTAssertEqual(
            step.sql(in: .postgresql),
            """
            CREATE UNIQUE INDEX notes_pinned ON notes (device_id, id) WHERE pinned;
            CREATE INDEX notes_scored ON notes (score) WHERE score IS NOT NULL;
            """)
    }
}
