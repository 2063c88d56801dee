import CLibPQ
import Foundation
import SQL

/// PostgreSQL runs the shared `SQLQuery`s as prepared statements: rendered with `$n` placeholders (typed ones cast,
/// so a statement's text and prepared form do not depend on which values are NULL), sent in text form with
/// `PQexecPrepared`, and read row by row through `PGRow`.
extension PGConnection: SQLConnection {
    package var dialect: SQLDialect { .postgresql }

    @discardableResult
    package func perform(_ query: SQLQuery) throws -> Int {
        try result(of: query).affectedRows
    }

    package func forEachRow(_ query: SQLQuery, _ body: (PGRow) throws -> Void) throws {
        let result = try result(of: query)
        for row in 0..<result.rowCount { try body(PGRow(result: result, row: row)) }
    }

    package func fetchOne<T>(_ query: SQLQuery, _ transform: (PGRow) throws -> T) throws -> T? {
        let result = try result(of: query)
        return result.rowCount > 0 ? try transform(PGRow(result: result, row: 0)) : nil
    }

    private func result(of query: SQLQuery) throws -> PGResult {
        let (text, values) = query.rendered(in: .postgresql)
        return try self.query(text, values.map(PGValue.init))
    }
}

/// One row of a result, its values by each column's type (`PQftype`): integers, reals, booleans and `bytea` as
/// such, everything else as text.
package struct PGRow: SQLRow {
    let result: PGResult
    let row: Int

    package var columnCount: Int { result.columnCount }
    package func columnName(at index: Int) -> String { result.columnName(index) }
    package func value(at index: Int) -> SQLValue { result.value(row, index) }
}

@available(*, unavailable, message: "A row belongs to its connection's thread")
extension PGRow: Sendable {}

extension PGResult {
    /// How many columns each row has.
    package var columnCount: Int { Int(PQnfields(handle)) }

    /// The name of column `index` as the SELECT list gave it.
    package func columnName(_ index: Int) -> String {
        PQfname(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// Column `column` of `row`, typed by the column's type OID (`pg_type`: bool 16, bytea 17, int8 20, int2 21,
    /// int4 23, oid 26, float4 700, float8 701); other types, `numeric` among them, stay text.
    package func value(_ row: Int, _ column: Int) -> SQLValue {
        guard !isNull(row, column) else { return .null }
        switch PQftype(handle, Int32(column)) {
        case 16: return .bool(bool(row, column))
        case 17: return .blob(bytes(row, column))
        case 20, 21, 23, 26: return Int64(text(row, column)).map(SQLValue.integer) ?? .text(text(row, column))
        case 700, 701: return Double(text(row, column)).map(SQLValue.real) ?? .text(text(row, column))
        default: return .text(text(row, column))
        }
    }
}

extension PGValue {
    /// A shared-layer value in libpq's text form.
    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let value): self = .integer(value)
        case .real(let value):
            // PostgreSQL's spelling of the non-finite values; finite ones in Swift's shortest round-trip form.
            if value.isNaN {
                self = .text("NaN")
            } else if value.isInfinite {
                self = .text(value < 0 ? "-Infinity" : "Infinity")
            } else {
                self = .text("\(value)")
            }
        case .text(let text): self = .text(text)
        case .blob(let data): self = .bytes(data)
        case .bool(let flag): self = .bool(flag)
        }
    }
}
