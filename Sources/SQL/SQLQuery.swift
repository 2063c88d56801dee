/// SQL text whose interpolations become bound parameters, rendered for one dialect only when it runs.
///
///     let query: SQLQuery = "SELECT label FROM api_keys WHERE instance_id = \(instanceID) AND key_id = \(keyID)"
///     query.rendered(in: .postgresql)   // "… WHERE instance_id = $1 AND key_id = $2", [.text(…), .text(…)]
///
/// A value never becomes SQL text, so there is nothing to escape; trusted text (a column list kept in a constant) goes
/// in with `\(raw:)`. The parts that differ between SQLite and PostgreSQL (placeholders and casts, `least`/`min`,
/// row-lock clauses) are kept as such and spelt by `SQLDialect` when rendered.
package struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    enum Piece: Sendable {
        case text(String)
        case parameter(SQLValue, SQLType?)
        case dialect(@Sendable (SQLDialect) -> String)
    }

    private(set) var pieces: [Piece]

    /// Trusted SQL text with no parameters.
    package init(raw text: String) { pieces = [.text(text)] }

    package init(stringLiteral value: String) { pieces = [.text(value)] }

    package init(stringInterpolation: StringInterpolation) { pieces = stringInterpolation.pieces }

    /// Appends `other`, its parameters numbered after this query's.
    package mutating func append(_ other: SQLQuery) { pieces += other.pieces }

    /// `lhs` followed by `rhs`.
    package static func + (lhs: SQLQuery, rhs: SQLQuery) -> SQLQuery {
        var query = lhs
        query.append(rhs)
        return query
    }

    /// The text for `dialect` with its parameters in the order they are numbered.
    package func rendered(in dialect: SQLDialect) -> (text: String, values: [SQLValue]) {
        // Sized once: appended piece by piece, the text grew (and was copied) several times per statement, and
        // every store call renders its statements (docs/BENCHMARKS.md "The engine's run of a publish with no
        // targets"). A PostgreSQL placeholder with its cast takes about 20 bytes (`$3::double precision` 20); a
        // longer text only grows once more.
        var length = 0
        var parameters = 0
        for piece in pieces {
            switch piece {
            case .text(let sql): length += sql.utf8.count
            case .parameter: parameters += 1
            case .dialect: length += 32
            }
        }
        var text = ""
        text.reserveCapacity(length + parameters * (dialect == .sqlite ? 1 : 20))
        var values: [SQLValue] = []
        values.reserveCapacity(parameters)
        for piece in pieces {
            switch piece {
            case .text(let sql):
                text += sql
            case .parameter(let value, let type):
                values.append(value)
                text += dialect.placeholder(values.count, type: type)
            case .dialect(let spell):
                text += spell(dialect)
            }
        }
        return (text, values)
    }

    /// Collects the pieces of an interpolated literal.
    package struct StringInterpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(2 * interpolationCount + 1)
        }

        package mutating func appendLiteral(_ literal: String) {
            guard !literal.isEmpty else { return }
            pieces.append(.text(literal))
        }

        /// A parameter of `T`'s type, NULL when `value` is nil.
        package mutating func appendInterpolation<T: SQLBindable>(_ value: T?) {
            pieces.append(.parameter(value?.sqlValue ?? .null, T.sqlType))
        }

        /// A parameter typed by its value (an untyped NULL for `.null`).
        package mutating func appendInterpolation(_ value: SQLValue) {
            pieces.append(.parameter(value, value.type))
        }

        /// One parameter per element, separated by commas, for `IN (…)`; `NULL` for an empty list, which matches
        /// nothing.
        package mutating func appendInterpolation<T: SQLBindable>(list values: [T]) {
            guard !values.isEmpty else { return pieces.append(.text("NULL")) }
            for (index, value) in values.enumerated() {
                if index > 0 { pieces.append(.text(", ")) }
                pieces.append(.parameter(value.sqlValue, T.sqlType))
            }
        }

        /// Trusted SQL text, such as a column list kept in a constant. Never a value from outside.
        package mutating func appendInterpolation(raw text: String) {
            pieces.append(.text(text))
        }

        /// Another query, its parameters numbered in place.
        package mutating func appendInterpolation(_ query: SQLQuery) {
            pieces += query.pieces
        }

        /// A row-lock clause (nothing on SQLite).
        package mutating func appendInterpolation(lock: SQLLock) {
            pieces.append(.dialect { $0.clause(lock) })
        }

        /// `lock`'s clause, or nothing for nil.
        package mutating func appendInterpolation(lock: SQLLock?) {
            if let lock { appendInterpolation(lock: lock) }
        }

        /// The dialect's name of `function`.
        package mutating func appendInterpolation(function: SQLFunction) {
            pieces.append(.dialect { $0.name(function) })
        }

        /// `expression` (trusted SQL text) cast to `type`.
        package mutating func appendInterpolation(cast expression: String, to type: SQLType) {
            pieces.append(.dialect { $0.cast(expression, to: type) })
        }

        /// `expression` (trusted SQL text) compared and sorted byte by byte.
        package mutating func appendInterpolation(byteOrder expression: String) {
            pieces.append(.dialect { $0.byteOrder(expression) })
        }

        /// `ON CONFLICT (…) DO NOTHING`, or `DO UPDATE SET c = excluded.c` for each column of `update`.
        package mutating func appendInterpolation(upsert conflict: [String], update: [String] = []) {
            pieces.append(.dialect { $0.upsert(conflict: conflict, update: update) })
        }

        /// `RETURNING columns…`.
        package mutating func appendInterpolation(returning columns: [String]) {
            pieces.append(.dialect { $0.returning(columns) })
        }
    }
}
