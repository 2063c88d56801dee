import Foundation
import SQL
import XCTest

/// The SQL literal: every interpolation becomes a parameter, numbered per dialect, and only `raw:` becomes text.
final class SQLQueryTests: XCTestCase {
    func testPlaceholdersAreNumberedInOrderOnPostgreSQLAndPlainOnSQLite() {
        let instance = "i-1"
        let key = "k-1"
        let query: SQLQuery = "SELECT 1 FROM api_keys WHERE instance_id = \(instance) AND key_id = \(key)"
        let sqlite = query.rendered(in: .sqlite)
        let postgresql = query.rendered(in: .postgresql)
        XCTAssertEqual(sqlite.text, "SELECT 1 FROM api_keys WHERE instance_id = ? AND key_id = ?")
        XCTAssertEqual(postgresql.text, "SELECT 1 FROM api_keys WHERE instance_id = $1 AND key_id = $2")
        XCTAssertEqual(sqlite.values, [.text("i-1"), .text("k-1")])
        XCTAssertEqual(postgresql.values, sqlite.values)
    }

    func testEveryValueKindBindsAsItsOwnKindAndCastsOnlyOnPostgreSQL() {
        let int64: Int64 = -7
        let int = 42
        let int32: Int32 = 3
        let double = 1.5
        let text = "a'b"
        let data = Data([0, 255])
        let flag = true
        let query: SQLQuery = "\(int64) \(int) \(int32) \(double) \(text) \(data) \(flag) \(SQLValue.null)"
        let sqlite = query.rendered(in: .sqlite)
        let postgresql = query.rendered(in: .postgresql)
        XCTAssertEqual(sqlite.text, "? ? ? ? ? ? ? ?")
        XCTAssertEqual(
            postgresql.text,
            "$1::bigint $2::bigint $3::bigint $4::double precision $5 $6::bytea $7::boolean $8")
        let expected: [SQLValue] = [
            .integer(-7), .integer(42), .integer(3), .real(1.5), .text("a'b"),
            .blob(Data([0, 255])), .bool(true), .null,
        ]
        XCTAssertEqual(sqlite.values, expected)
        XCTAssertEqual(postgresql.values, expected)
    }

    func testANilOptionalBindsNullButKeepsItsTypeSoTheTextDoesNotChange() {
        let absent: Int64? = nil
        let present: Int64? = 5
        let noText: String? = nil
        let withNil: SQLQuery = "UPDATE t SET a = \(absent), b = \(noText)"
        let withValue: SQLQuery = "UPDATE t SET a = \(present), b = \(noText)"
        XCTAssertEqual(withNil.rendered(in: .postgresql).text, "UPDATE t SET a = $1::bigint, b = $2")
        XCTAssertEqual(withNil.rendered(in: .postgresql).text, withValue.rendered(in: .postgresql).text)
        XCTAssertEqual(withNil.rendered(in: .sqlite).values, [.null, .null])
        XCTAssertEqual(withValue.rendered(in: .sqlite).values, [.integer(5), .null])
    }

    func testAValueIsNeverSpliceIntoTheTextButRawTextIs() {
        let hostile = "x'; DROP TABLE api_keys; --"
        let columns = "key_id, label"
        let query: SQLQuery = "SELECT \(raw: columns) FROM api_keys WHERE label = \(hostile)"
        let rendered = query.rendered(in: .sqlite)
        XCTAssertEqual(rendered.text, "SELECT key_id, label FROM api_keys WHERE label = ?")
        XCTAssertEqual(rendered.values, [.text(hostile)])
    }

    func testNestedAndAppendedQueriesNumberTheirParametersAfterThoseBefore() {
        let inner: SQLQuery = "key_id = \("k")"
        var query: SQLQuery = "SELECT 1 FROM api_keys WHERE instance_id = \("i") AND \(inner)"
        query.append(" AND created_at > \(Int64(9))")
        let rendered = (query + " LIMIT \(1)").rendered(in: .postgresql)
        XCTAssertEqual(
            rendered.text,
            "SELECT 1 FROM api_keys WHERE instance_id = $1 AND key_id = $2 AND created_at > $3::bigint LIMIT $4::bigint"
        )
        XCTAssertEqual(rendered.values, [.text("i"), .text("k"), .integer(9), .integer(1)])
    }

    func testAListBindsOneParameterPerElementAndAnEmptyListMatchesNothing() {
        let ids = ["a", "b", "c"]
        let none: [String] = []
        let query: SQLQuery = "DELETE FROM t WHERE id IN (\(list: ids)) OR id IN (\(list: none))"
        XCTAssertEqual(query.rendered(in: .postgresql).text, "DELETE FROM t WHERE id IN ($1, $2, $3) OR id IN (NULL)")
        XCTAssertEqual(query.rendered(in: .sqlite).text, "DELETE FROM t WHERE id IN (?, ?, ?) OR id IN (NULL)")
        XCTAssertEqual(query.rendered(in: .sqlite).values, [.text("a"), .text("b"), .text("c")])
    }

    func testAStringLiteralWithoutInterpolationHasNoParameters() {
        let query: SQLQuery = "DELETE FROM audit_log"
        XCTAssertEqual(query.rendered(in: .postgresql).text, "DELETE FROM audit_log")
        XCTAssertEqual(query.rendered(in: .postgresql).values, [])
        XCTAssertEqual(SQLQuery(raw: "VACUUM").rendered(in: .sqlite).text, "VACUUM")
    }
}
