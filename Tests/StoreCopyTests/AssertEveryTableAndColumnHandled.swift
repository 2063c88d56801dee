import StoreCopy
import XCTest

/// Every table and column of `side`'s schema is copied or deliberately skipped by `CopyPlan`, and every planned
/// table and column exists there.
func assertEveryTableAndColumnHandled(_ side: any StoreSide, file: StaticString = #filePath, line: UInt = #line) throws
{
    let tables = try side.tableNames()
    XCTAssertEqual(
        CopyPlan.unhandledTables(tables, backend: side.backend), [], "\(side.backend)", file: file, line: line)
    var copied = 0
    for table in tables {
        guard let unknown = CopyPlan.unhandledColumns(try side.columnNames(table), table: table, backend: side.backend)
        else { continue }
        copied += 1
        XCTAssertEqual(unknown, [], "\(side.backend) \(table)", file: file, line: line)
    }
    let storage = Set(CopyPlan.tables.flatMap { $0.storageTables(side.backend) })
    XCTAssertEqual(
        copied, storage.count, "a planned table is missing from the \(side.backend) schema", file: file, line: line)
    // Every planned column really exists (a typo in the plan would fail only at copy time otherwise).
    for table in CopyPlan.tables {
        for (name, columns) in table.storageColumns(side.backend) {
            XCTAssertEqual(Set(try side.columnNames(name)), columns, "\(side.backend) \(name)", file: file, line: line)
        }
    }
}
