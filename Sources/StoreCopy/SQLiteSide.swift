import Foundation
import JSON
import SQL
import SQLiteStore

/// A SQLite database file as one end of a store move, through its own connection (not the store's threads).
///
/// As a source it is opened read-only and read in one read transaction: in WAL mode that is a snapshot, so a server
/// still running on the file goes on writing while the copy reads what was committed when it began. As a target it
/// is written in one transaction (all or nothing) with one prepared INSERT per table.
package final class SQLiteSide: StoreSide {
    package let backend = Backend.sqlite
    private let connection: SQLiteConnection
    /// Prepared INSERTs of the table being loaded and the highest `?N` each uses.
    private var inserts: [(statement: Statement, parameters: Int)] = []

    /// Opens `path`; a source must exist and is opened read-only.
    /// - Throws: `StoreCopyError.unreadableSource` for a missing or unreadable source, `SQLiteError`.
    package init(path: String, asSource: Bool) throws {
        if asSource {
            guard FileManager.default.fileExists(atPath: path) else {
                throw StoreCopyError.unreadableSource("\(path): no such file")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw StoreCopyError.unreadableSource("\(path): permission denied")
            }
        }
        do {
            connection = try SQLiteConnection(path: path, readOnly: asSource)
            // A running server's writer holds the write lock in short bursts; a reader in WAL mode never waits for
            // it, but a checkpoint or the WAL index being rebuilt can make a call busy for a moment.
            try connection.execute("PRAGMA busy_timeout = 10000")
            // The whole load is one transaction into tables with random-key unique indexes (tokens, public ids): a
            // cache that holds them saves re-reading their pages (1 GiB at most, used only as the database grows).
            if !asSource { try connection.execute("PRAGMA cache_size = -1048576") }
            _ = try connection.first("SELECT count(*) FROM sqlite_schema") { $0.int64(0) }
        } catch let error as SQLiteError where asSource {
            throw StoreCopyError.unreadableSource("\(path): \(error.message)")
        }
    }

    deinit { try? connection.close() }

    package func schemaVersion() throws -> (found: Int, newest: Int) {
        let found = try connection.first("PRAGMA user_version") { $0.int64(0) } ?? 0
        return (Int(found), SQLitePushStore.newestSchemaVersion)
    }

    package func tableNames() throws -> [String] {
        var names: [String] = []
        try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") {
            names.append($0.text(0))
        }
        return names
    }

    package func columnNames(_ table: String) throws -> [String] {
        var names: [String] = []
        try connection.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]) {
            names.append($0.text(0))
        }
        return names
    }

    package func beginSnapshot() throws {
        // A deferred transaction takes its snapshot at the first read, which follows at once.
        try connection.execute("BEGIN")
        _ = try connection.first("SELECT count(*) FROM sqlite_schema") { $0.int64(0) }
    }

    package func endSnapshot() throws { try connection.execute("COMMIT") }

    package func count(_ table: CopyTable) throws -> Int64 {
        try connection.first("SELECT count(*) FROM (\(table.sqlite.select))") { $0.int64(0) } ?? 0
    }

    package func read(_ table: CopyTable, _ row: ([PortableValue]) throws -> Void) throws {
        let statement = try connection.prepare(table.sqlite.select)
        defer { statement.finalize() }
        var values = [PortableValue](repeating: .null, count: table.columns.count)
        while try statement.step() {
            for (index, column) in table.columns.enumerated() {
                let position = Int32(index)
                guard !statement.isNull(position) else {
                    values[index] = .null
                    continue
                }
                switch column.type {
                case .integer: values[index] = .integer(statement.int64(position))
                case .text: values[index] = .text(statement.text(position))
                case .bytes: values[index] = .bytes(statement.blob(position))
                case .boolean: values[index] = .boolean(statement.int64(position) != 0)
                case .textList:
                    guard let items = CopyText.jsonStrings(Array(statement.text(position).utf8)) else {
                        throw StoreCopyError.unreadableValue(table: table.name, column: column.name, backend: .sqlite)
                    }
                    values[index] = .textList(items)
                }
            }
            try row(values)
        }
    }

    package func sequenceMark(_ table: CopyTable) throws -> Int64? {
        try connection.first("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table.name)]) { $0.int64(0) }
    }

    package func openShards() throws -> Int64 { 0 }

    package func beginLoad(replace: Bool) throws {
        try connection.execute("BEGIN IMMEDIATE")
        guard replace else { return }
        // Children first; the triggers keep the count tables, which are then emptied too.
        for table in CopyPlan.tables.reversed() {
            for name in table.sqlite.tables { try connection.execute("DELETE FROM \(name)") }
        }
        if try connection.first("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'", [], { $0.int64(0) })
            != nil
        {
            try connection.execute("DELETE FROM sqlite_sequence")
        }
    }

    package func load(_ table: CopyTable, _ produce: (_ write: ([PortableValue]) throws -> Void) throws -> Void) throws
    {
        for sql in table.sqlite.beforeLoad { try connection.execute(sql) }
        inserts = try table.sqlite.inserts.map { sql in (try connection.prepare(sql), Self.highestParameter(sql)) }
        defer {
            for insert in inserts { insert.statement.finalize() }
            inserts = []
        }
        try produce { row in
            for insert in self.inserts {
                for index in 0..<insert.parameters {
                    try insert.statement.bind(Self.sqlValue(row[index]), at: Int32(index + 1))
                }
                _ = try insert.statement.step()
                insert.statement.reset()
            }
        }
    }

    package func commitLoad(marks: [String: Int64]) throws {
        for (name, mark) in marks {
            // SQLite raised the counter to the largest id inserted; a higher mark (ids of deleted rows) wins.
            let changed = try connection.run(
                "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                [.integer(mark), .text(name)])
            if changed == 0 {
                try connection.run(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(name), .integer(mark)])
            }
        }
        try connection.execute("COMMIT")
    }

    package func rollbackLoad() { try? connection.execute("ROLLBACK") }

    /// How SQLite stores a portable value: booleans as 0/1, lists as the JSON text the store writes
    /// (`SQLitePushStore.encodeTargets`).
    static func sqlValue(_ value: PortableValue) -> SQLValue {
        switch value {
        case .null: return .null
        case .integer(let number): return .integer(number)
        case .text(let text): return .text(text)
        case .bytes(let data): return .blob(data)
        case .boolean(let flag): return .integer(flag ? 1 : 0)
        case .textList(let items): return .text(JSONValue.array(items.map(JSONValue.string)).jsonText)
        }
    }

    /// The highest `?N` in `sql` (SQLite's parameter count for numbered parameters).
    static func highestParameter(_ sql: String) -> Int {
        var highest = 0
        var digits: Int?
        for character in sql + " " {
            if let digit = character.wholeNumberValue, digits != nil {
                digits = digits! * 10 + digit
            } else {
                if let number = digits { highest = max(highest, number) }
                digits = character == "?" ? 0 : nil
            }
        }
        return highest
    }
}

@available(*, unavailable, message: "A copy side belongs to the thread running the copy")
extension SQLiteSide: Sendable {}
