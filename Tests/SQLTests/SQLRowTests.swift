import Foundation
import SQL
import XCTest

/// Reading a row through the one decoder: by index and name, optionals, and the typed errors.
final class SQLRowTests: XCTestCase {
    /// A row held as values, the shape every backend's row reduces to.
    private struct ValuesRow: SQLRow {
        let columns: [(String, SQLValue)]
        var columnCount: Int { columns.count }
        func columnName(at index: Int) -> String { columns[index].0 }
        func value(at index: Int) -> SQLValue { columns[index].1 }
    }

    private let row = ValuesRow(columns: [
        ("seq", .integer(7)), ("label", .text("ci")), ("secret", .null), ("ratio", .real(0.25)),
        ("digest", .blob(Data([1, 2]))), ("live", .bool(true)), ("flag", .integer(1)), ("total", .text("12")),
    ])

    func testColumnsDecodeByIndexAndByNameIntoEveryKind() throws {
        XCTAssertEqual(try row.decode(0, as: Int64.self), 7)
        XCTAssertEqual(try row.decode("seq", as: Int.self), 7)
        XCTAssertEqual(try row.decode("label", as: String.self), "ci")
        XCTAssertEqual(try row.decode("ratio", as: Double.self), 0.25)
        XCTAssertEqual(try row.decode("seq", as: Double.self), 7)
        XCTAssertEqual(try row.decode("digest", as: Data.self), Data([1, 2]))
        XCTAssertEqual(try row.decode("live", as: Bool.self), true)
        XCTAssertEqual(try row.decode("flag", as: Bool.self), true)
        XCTAssertEqual(try row.decode("total", as: Int64.self), 12)
    }

    func testNullIsNilForAnOptionalAndAnErrorOtherwise() throws {
        XCTAssertNil(try row.decode("secret", as: String?.self))
        XCTAssertEqual(try row.decode("label", as: String?.self), "ci")
        XCTAssertThrowsError(try row.decode("secret", as: String.self)) { error in
            XCTAssertEqual(error as? SQLDecodingError, .unexpectedNull(column: "secret"))
        }
    }

    func testAValueOfAnotherKindIsATypeMismatchEvenForAnOptional() {
        XCTAssertThrowsError(try row.decode("seq", as: String.self)) { error in
            XCTAssertEqual(
                error as? SQLDecodingError, .typeMismatch(column: "seq", expected: "String", found: .integer))
        }
        XCTAssertThrowsError(try row.decode("label", as: Int64?.self)) { error in
            XCTAssertEqual(
                error as? SQLDecodingError,
                .typeMismatch(column: "label", expected: "Optional<Int64>", found: .text))
        }
        XCTAssertThrowsError(try row.decode("seq", as: Bool.self))
    }

    func testAMissingColumnIsNamedInTheError() {
        XCTAssertThrowsError(try row.decode("nope", as: Int64.self)) { error in
            XCTAssertEqual(error as? SQLDecodingError, .noSuchColumn("nope"))
        }
        XCTAssertThrowsError(try row.decode(8, as: Int64.self)) { error in
            XCTAssertEqual(error as? SQLDecodingError, .noSuchColumn("8"))
        }
    }
}
