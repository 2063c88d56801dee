import CSQLite
import Foundation
import PushStore
import SQL
import SQLiteStore
import XCTest

final class SQLiteConnectionTests: StoreTestCase {
    func testSyntaxErrorThrowsSQLiteErrorWithMessageAndSQL() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        XCTAssertThrowsError(try connection.run("SELEC 1")) { error in
            guard let error = error as? SQLiteError else { return XCTFail("not an SQLiteError: \(error)") }
            XCTAssertEqual(error.code, SQLITE_ERROR)
            XCTAssertTrue(error.message.contains("syntax error"), error.message)
            XCTAssertEqual(error.sql, "SELEC 1")
        }
    }

    func testUniqueViolationCarriesExtendedCode() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        try connection.execute("CREATE TABLE t (v TEXT UNIQUE)")
        try connection.run("INSERT INTO t VALUES (?)", [.text("x")])
        XCTAssertThrowsError(try connection.run("INSERT INTO t VALUES (?)", [.text("x")])) { error in
            guard let error = error as? SQLiteError else { return XCTFail("not an SQLiteError: \(error)") }
            XCTAssertTrue(error.isConstraintViolation)
            XCTAssertEqual(error.extendedCode, constraintUnique)
            XCTAssertTrue(error.message.contains("UNIQUE"), error.message)
        }
    }

    func testTypedColumnReadersAnswerExactlyWhatDecodeAnswers() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        // Every storage class, integer-looking text, empty text, and (index 7) a column that does not exist.
        let query: SQLQuery = """
            SELECT 'ci' AS label, NULL AS secret, 7 AS seq, 0.25 AS ratio, x'0102' AS digest, '12' AS total,
                '' AS empty
            """
        func outcome<T>(_ read: () throws -> T) -> String {
            do { return "value \(try read())" } catch { return "error \(error)" }
        }
        var checked = 0
        try connection.forEachRow(query) { row in
            for index in 0...row.columnCount {
                XCTAssertEqual(
                    outcome { try row.text(at: index) }, outcome { try row.decode(index, as: String.self) },
                    "text(at: \(index))")
                XCTAssertEqual(
                    outcome { try row.optionalText(at: index) }, outcome { try row.decode(index, as: String?.self) },
                    "optionalText(at: \(index))")
                XCTAssertEqual(
                    outcome { try row.integer(at: index) }, outcome { try row.decode(index, as: Int64.self) },
                    "integer(at: \(index))")
                checked += 1
            }
        }
        XCTAssertEqual(checked, 8)
    }

    func testOpeningAFileInAMissingDirectoryFails() {
        XCTAssertThrowsError(try SQLiteConnection(path: directory.appendingPathComponent("missing/x.sqlite").path)) {
            error in
            XCTAssertEqual((error as? SQLiteError)?.code, SQLITE_CANTOPEN)
        }
    }

    func testCloseIsIdempotentAndStatementsSurviveIt() throws {
        let connection = try SQLiteConnection(path: databasePath)
        let uncached = try connection.prepare("SELECT 1")
        _ = try connection.cached("SELECT 2")
        try connection.close()
        try connection.close()
        XCTAssertTrue(connection.isClosed)
        // sqlite3_close_v2 keeps the database alive until the last statement is finalized.
        uncached.finalize()
    }

    func testValuesRoundTripIncludingEmptyBlobAndNull() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        try connection.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
        try connection.run(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
            [.integer(Int64.max), .real(1.5), .text("héllo\u{0}x"), .blob(Data()), .null])
        let row = try connection.first("SELECT i, r, s, b, typeof(b), n FROM t") { row in
            (row.int64(0), row.text(2), row.blob(3), row.text(4), row.optionalText(5))
        }
        XCTAssertEqual(row?.0, Int64.max)
        XCTAssertEqual(row?.1, "héllo\u{0}x")
        XCTAssertEqual(row?.2, Data())
        XCTAssertEqual(row?.3, "blob")
        XCTAssertNil(row?.4 ?? nil)
    }

    func testStepErrorAfterBindIsReportedAndStatementIsReusable() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        try connection.execute("CREATE TABLE t (v TEXT NOT NULL)")
        XCTAssertThrowsError(try connection.run("INSERT INTO t VALUES (?)", [.null])) { error in
            XCTAssertEqual((error as? SQLiteError)?.extendedCode, constraintNotNull)
        }
        try connection.run("INSERT INTO t VALUES (?)", [.text("ok")])
        XCTAssertEqual(try connection.first("SELECT count(*) FROM t") { $0.int64(0) }, 1)
    }
}

// Extended result codes are macros (`SQLITE_CONSTRAINT | (n << 8)`) that Swift does not import.
private let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
private let constraintNotNull: Int32 = SQLITE_CONSTRAINT | (5 << 8)
