import CLibPQ
import Foundation
import PushStore

/// One query result; the only owner of its `PGresult*` (cleared on deinit). Values are read in text format.
///
/// Not `Sendable`: rows are mapped to Swift values on the connection's thread and only those values leave it.
package final class PGResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    package var rowCount: Int { Int(PQntuples(handle)) }

    /// Rows an INSERT, UPDATE or DELETE changed (`PQcmdTuples`).
    package var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    package func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    package func text(_ row: Int, _ column: Int) -> String {
        guard let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return "" }
        return String(cString: value)
    }

    package func optionalText(_ row: Int, _ column: Int) -> String? { isNull(row, column) ? nil : text(row, column) }

    /// A bigint column (0 for NULL or anything unparsable, which the schema rules out).
    package func int64(_ row: Int, _ column: Int) -> Int64 { Int64(text(row, column)) ?? 0 }

    package func optionalInt64(_ row: Int, _ column: Int) -> Int64? { isNull(row, column) ? nil : int64(row, column) }

    package func bool(_ row: Int, _ column: Int) -> Bool { text(row, column) == "t" }

    /// A millisecond column as a date.
    func date(_ row: Int, _ column: Int) -> Date { Date(millisecondsSince1970: int64(row, column)) }

    func optionalDate(_ row: Int, _ column: Int) -> Date? { isNull(row, column) ? nil : date(row, column) }

    /// A `bytea` column from its text form `\x<hex>`.
    func bytes(_ row: Int, _ column: Int) -> Data {
        let text = Array(self.text(row, column).utf8)
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return Data() }
        var data = Data(capacity: (text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            guard let high = Self.nibble(text[index]), let low = Self.nibble(text[index + 1]) else { return Data() }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Maps every row.
    func map<T>(_ transform: (Int) throws -> T) rethrows -> [T] {
        try (0..<rowCount).map(transform)
    }

    /// The first row mapped, or nil when there is none.
    func first<T>(_ transform: (Int) throws -> T) rethrows -> T? {
        rowCount > 0 ? try transform(0) : nil
    }
}
