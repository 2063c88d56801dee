import SQL
import XCTest

/// What each dialect spells differently, and what it spells the same.
final class SQLDialectTests: XCTestCase {
    func testLockClausesAppearOnlyOnPostgreSQL() {
        let query: SQLQuery =
            "SELECT id FROM publish_jobs WHERE state = \("queued") LIMIT \(1) \(lock: .forUpdateSkipLocked)"
        XCTAssertEqual(
            query.rendered(in: .postgresql).text,
            "SELECT id FROM publish_jobs WHERE state = $1 LIMIT $2::bigint FOR UPDATE SKIP LOCKED")
        XCTAssertEqual(query.rendered(in: .sqlite).text, "SELECT id FROM publish_jobs WHERE state = ? LIMIT ? ")
        XCTAssertEqual(SQLDialect.postgresql.clause(.forUpdate), "FOR UPDATE")
        XCTAssertEqual(SQLDialect.sqlite.clause(.forUpdate), "")
    }

    func testLeastAndGreatestAreMinAndMaxOnSQLite() {
        let at: Int64 = 5
        let query: SQLQuery =
            "SET a = \(function: .least)(coalesce(a, \(at)), \(at)), b = \(function: .greatest)(b, \(at))"
        XCTAssertEqual(query.rendered(in: .sqlite).text, "SET a = min(coalesce(a, ?), ?), b = max(b, ?)")
        XCTAssertEqual(
            query.rendered(in: .postgresql).text,
            "SET a = least(coalesce(a, $1::bigint), $2::bigint), b = greatest(b, $3::bigint)")
    }

    func testByteOrderCollatesAsCOnPostgreSQLAndIsSQLitesDefault() {
        let query: SQLQuery = "WHERE \(byteOrder: "i.name") > \("") ORDER BY \(byteOrder: "i.name")"
        XCTAssertEqual(query.rendered(in: .sqlite).text, "WHERE i.name > ? ORDER BY i.name")
        XCTAssertEqual(
            query.rendered(in: .postgresql).text,
            "WHERE i.name COLLATE \"C\" > $1 ORDER BY i.name COLLATE \"C\"")
    }

    func testCastsUseEachDialectsSyntax() {
        let query: SQLQuery = "SELECT \(cast: "seq", to: .text), \(cast: "flag", to: .bool)"
        XCTAssertEqual(query.rendered(in: .sqlite).text, "SELECT CAST(seq AS TEXT), CAST(flag AS INTEGER)")
        XCTAssertEqual(query.rendered(in: .postgresql).text, "SELECT (seq)::text, (flag)::boolean")
        for type in SQLType.allCases {
            XCTAssertEqual(SQLDialect.sqlite.placeholder(3, type: type), "?")
        }
        XCTAssertEqual(SQLDialect.postgresql.placeholder(3, type: .real), "$3::double precision")
        XCTAssertEqual(SQLDialect.postgresql.placeholder(3, type: nil), "$3")
    }

    func testUpsertAndReturningAreSpeltTheSameOnBoth() {
        let query: SQLQuery = """
            INSERT INTO quotas (instance_id, day, count) VALUES (\("i"), \(Int64(1)), \(1)) \
            \(upsert: ["instance_id", "day"], update: ["count"]) \(returning: ["count"])
            """
        let sqlite = query.rendered(in: .sqlite).text
        let postgresql = query.rendered(in: .postgresql).text
        XCTAssertEqual(
            sqlite,
            "INSERT INTO quotas (instance_id, day, count) VALUES (?, ?, ?) "
                + "ON CONFLICT (instance_id, day) DO UPDATE SET count = excluded.count RETURNING count")
        XCTAssertTrue(
            postgresql.hasSuffix(
                "ON CONFLICT (instance_id, day) DO UPDATE SET count = excluded.count RETURNING count"))
        let nothing: SQLQuery = "\(upsert: ["instance_id", "key_id"])"
        XCTAssertEqual(nothing.rendered(in: .postgresql).text, "ON CONFLICT (instance_id, key_id) DO NOTHING")
    }
}
