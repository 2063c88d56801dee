import CSQLite
import Foundation
import PushStore
import SQL

/// One prepared statement; the only owner of its `sqlite3_stmt*`.
///
/// Not thread-safe: it belongs to the connection that prepared it, which is used by one thread at a time.
/// Cached statements are finalized by `SQLiteConnection.close()`; uncached ones by `finalize()` (or `deinit`).
package final class Statement {
    private var handle: OpaquePointer?
    /// Borrowed: the connection outlives its statements (sqlite3_close_v2 defers closing until they are finalized).
    private let db: OpaquePointer
    /// The SQL text, for error messages.
    package let sql: String

    init(db: OpaquePointer, sql: String) throws {
        self.db = db
        self.sql = sql
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        do {
            try SQLiteConnection.check(rc, db: db, sql: sql)
        } catch {
            sqlite3_finalize(stmt)
            throw error
        }
        guard let stmt else {
            // SQL that is only whitespace or a comment compiles to no statement.
            throw SQLiteError(code: SQLITE_MISUSE, extendedCode: SQLITE_MISUSE, message: "empty statement", sql: sql)
        }
        self.handle = stmt
    }

    deinit { finalize() }

    /// Frees the statement. Idempotent.
    package func finalize() {
        if let handle {
            // sqlite3_finalize only repeats the last step's error, which was already thrown by `step()`.
            sqlite3_finalize(handle)
            self.handle = nil
        }
    }

    private var stmt: OpaquePointer {
        guard let handle else { preconditionFailure("statement used after finalize: \(sql)") }
        return handle
    }

    /// The statement's return codes go through the connection's one `check`, with this statement's SQL.
    @discardableResult
    private func check(_ rc: Int32) throws -> Int32 {
        try SQLiteConnection.check(rc, db: db, sql: sql)
    }

    /// Binds `values` to parameters 1...n.
    package func bind(_ values: [SQLValue]) throws {
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one value to the 1-based parameter `index`.
    package func bind(_ value: SQLValue, at index: Int32) throws {
        switch value {
        case .null:
            try check(sqlite3_bind_null(stmt, index))
        case .integer(let v):
            try check(sqlite3_bind_int64(stmt, index, v))
        case .bool(let v):
            // SQLite has no boolean: 0 or 1, as the schema's CHECKs expect.
            try check(sqlite3_bind_int64(stmt, index, v ? 1 : 0))
        case .real(let v):
            try check(sqlite3_bind_double(stmt, index, v))
        case .text(let v):
            var copy = v
            try copy.withUTF8 { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    try check(sqlite3_bind_text(stmt, index, "", 0, csqlite_transient()))
                    return
                }
                let chars = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
                try check(sqlite3_bind_text(stmt, index, chars, try length(bytes.count), csqlite_transient()))
            }
        case .blob(let v):
            if v.isEmpty {
                // A nil pointer would bind NULL; an empty blob must stay an empty blob.
                try check(sqlite3_bind_zeroblob(stmt, index, 0))
            } else {
                try v.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Void in
                    try check(
                        sqlite3_bind_blob(stmt, index, bytes.baseAddress, try length(bytes.count), csqlite_transient()))
                }
            }
        }
    }

    /// A bind length as SQLite's `Int32`; past it SQLite's own "string or blob too big" error, never a trap.
    private func length(_ count: Int) throws -> Int32 {
        guard let length = Int32(exactly: count) else {
            throw SQLiteError(
                code: SQLITE_TOOBIG, extendedCode: SQLITE_TOOBIG, message: "string or blob too big", sql: sql)
        }
        return length
    }

    /// Advances to the next row: `true` when a row is available, `false` when the statement is done.
    package func step() throws -> Bool {
        try check(sqlite3_step(stmt)) == SQLITE_ROW
    }

    /// Rewinds the statement and clears its bindings so it can be reused.
    package func reset() {
        // The return code repeats the last step's error, which `step()` already threw.
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    /// Whether column `index` (0-based) of the current row is NULL.
    package func isNull(_ index: Int32) -> Bool { sqlite3_column_type(stmt, index) == SQLITE_NULL }

    /// The storage class of column `index` of the current row (`SQLITE_INTEGER`, `SQLITE_TEXT`, …).
    package func storageClass(_ index: Int32) -> Int32 { sqlite3_column_type(stmt, index) }

    /// Column `index` as an integer (NULL reads as 0).
    package func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(stmt, index) }

    /// Column `index` as an integer, or `nil` for NULL.
    package func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }

    /// Column `index` as text (NULL reads as "").
    package func text(_ index: Int32) -> String {
        guard let bytes = sqlite3_column_text(stmt, index) else { return "" }
        let count = Int(sqlite3_column_bytes(stmt, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `index` as text, or `nil` for NULL.
    package func optionalText(_ index: Int32) -> String? { isNull(index) ? nil : text(index) }

    /// Column `index` as bytes (NULL reads as empty).
    package func blob(_ index: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(stmt, index))
        guard count > 0, let bytes = sqlite3_column_blob(stmt, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// Column `index` as milliseconds since 1970 converted to a `Date`, or `nil` for NULL.
    package func optionalDate(_ index: Int32) -> Date? { optionalInt64(index).map(Date.init(millisecondsSince1970:)) }

    /// Column `index` as milliseconds since 1970 converted to a `Date`.
    package func date(_ index: Int32) -> Date { Date(millisecondsSince1970: int64(index)) }

    /// How many columns a row of this statement has.
    package var columnCount: Int { Int(sqlite3_column_count(stmt)) }

    /// The name of column `index` as the SELECT list gave it.
    package func columnName(_ index: Int32) -> String {
        sqlite3_column_name(stmt, index).map { String(cString: $0) } ?? ""
    }

    /// Column `index` of the current row by its storage class (SQLite has no boolean: 0/1 read as integers).
    package func value(_ index: Int32) -> SQLValue {
        switch sqlite3_column_type(stmt, index) {
        case SQLITE_INTEGER: return .integer(int64(index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(stmt, index))
        case SQLITE_TEXT: return .text(text(index))
        case SQLITE_BLOB: return .blob(blob(index))
        default: return .null
        }
    }
}

@available(*, unavailable, message: "A statement belongs to its connection's thread")
extension Statement: Sendable {}
