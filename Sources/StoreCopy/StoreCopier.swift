import Clocks
import Foundation

/// The store move: checks both ends, copies every table of `CopyPlan` from one snapshot of the source into one
/// transaction on the target, then reads the target back and compares each table's row count and checksum with what
/// was read from the source.
///
/// The target is all or nothing: a failure before COMMIT leaves it as it was. Writes to the source after its
/// snapshot began are not copied (stop the servers for the final copy).
package final class StoreCopier {
    /// One table's result.
    package struct TableResult: Sendable, Equatable {
        package let table: String
        package let sourceRows: Int64
        package let sourceChecksum: String
        package let targetRows: Int64
        package let targetChecksum: String
        package var matches: Bool { sourceRows == targetRows && sourceChecksum == targetChecksum }
    }

    /// What a finished copy found.
    package struct Report: Sendable {
        package let tables: [TableResult]
        /// Seconds spent copying (snapshot to COMMIT) and verifying.
        package let copySeconds: Double
        package let verifySeconds: Double
        package var matches: Bool { tables.allSatisfy(\.matches) }
    }

    private let source: any StoreSide
    private let target: any StoreSide
    private let replace: Bool
    private let progress: (String) -> Void
    /// Seconds between progress lines while a table copies.
    private let progressInterval: Double

    /// - Parameter progress: receives human-readable progress lines (the CLI writes them to stderr).
    package init(
        source: any StoreSide, target: any StoreSide, replace: Bool, progressInterval: Double = 2,
        progress: @escaping (String) -> Void
    ) {
        self.source = source
        self.target = target
        self.replace = replace
        self.progressInterval = progressInterval
        self.progress = progress
    }

    /// Runs the copy and the verification.
    /// - Throws: `StoreCopyError` when a check refuses, or the backend's error when a read or write fails (the
    ///   target is then rolled back).
    package func run() throws -> Report {
        guard source.backend != target.backend else { throw StoreCopyError.sameBackend(source.backend) }
        try check(source, side: "source")
        try check(target, side: "target")
        if !replace {
            let rows = try target.nonEmptyTables()
            guard rows.isEmpty else { throw StoreCopyError.targetNotEmpty(rows) }
        }

        let copyStart = MonotonicClock.now()
        try source.beginSnapshot()
        var sourceOpen = true
        defer { if sourceOpen { try? source.endSnapshot() } }
        if target.backend == .sqlite {
            let shards = try source.openShards()
            guard shards == 0 else { throw StoreCopyError.openShards(shards) }
        }
        var marks: [String: Int64] = [:]
        for table in CopyPlan.tables where table.carriesSequence {
            if let mark = try source.sequenceMark(table) { marks[table.name] = mark }
        }
        var sourceSums: [(rows: Int64, checksum: String)] = []
        try target.beginLoad(replace: replace)
        do {
            for table in CopyPlan.tables {
                let total = try source.count(table)
                sourceSums.append(try copy(table, total: total))
            }
            progress("committing")
            try target.commitLoad(marks: marks)
        } catch {
            target.rollbackLoad()
            throw error
        }
        sourceOpen = false
        try source.endSnapshot()
        let copySeconds = MonotonicClock.elapsed(since: copyStart).seconds

        let verifyStart = MonotonicClock.now()
        var results: [TableResult] = []
        try target.beginSnapshot()
        var targetOpen = true
        defer { if targetOpen { try? target.endSnapshot() } }
        for (table, sums) in zip(CopyPlan.tables, sourceSums) {
            progress("verifying \(table.name)")
            let checksum = TableChecksum()
            try target.read(table) { checksum.add($0) }
            results.append(
                TableResult(
                    table: table.name, sourceRows: sums.rows, sourceChecksum: sums.checksum,
                    targetRows: checksum.rows, targetChecksum: checksum.finish()))
        }
        targetOpen = false
        try target.endSnapshot()
        return Report(
            tables: results, copySeconds: copySeconds,
            verifySeconds: MonotonicClock.elapsed(since: verifyStart).seconds)
    }

    private func check(_ side: any StoreSide, side name: String) throws {
        let version = try side.schemaVersion()
        guard version.found == version.newest else {
            throw StoreCopyError.schemaVersion(
                side: name, backend: side.backend, found: version.found, newest: version.newest)
        }
        let tables = try side.tableNames()
        let unknown = CopyPlan.unhandledTables(tables, backend: side.backend)
        guard unknown.isEmpty else { throw StoreCopyError.unhandledTables(backend: side.backend, tables: unknown) }
        for table in tables {
            guard
                let columns = CopyPlan.unhandledColumns(
                    try side.columnNames(table), table: table, backend: side.backend),
                !columns.isEmpty
            else { continue }
            throw StoreCopyError.unhandledColumns(backend: side.backend, table: table, columns: columns)
        }
    }

    /// Streams one table from the source into the target, checksumming what was read.
    private func copy(_ table: CopyTable, total: Int64) throws -> (rows: Int64, checksum: String) {
        let checksum = TableChecksum()
        let start = MonotonicClock.now()
        var lastReport = MonotonicClock.seconds()
        try target.load(table) { write in
            try source.read(table) { row in
                checksum.add(row)
                try write(row)
                if checksum.rows & 1023 == 0, MonotonicClock.seconds() - lastReport >= progressInterval {
                    lastReport = MonotonicClock.seconds()
                    progress(
                        Self.progressLine(
                            table.name, done: checksum.rows, total: total,
                            seconds: MonotonicClock.elapsed(since: start).seconds))
                }
            }
        }
        progress(
            Self.progressLine(
                table.name, done: checksum.rows, total: total,
                seconds: MonotonicClock.elapsed(since: start).seconds))
        return (checksum.rows, checksum.finish())
    }

    static func progressLine(_ table: String, done: Int64, total: Int64, seconds: Double) -> String {
        let percent = total > 0 ? min(100, Int(done * 100 / total)) : 100
        let rate = seconds > 0 ? Int(Double(done) / seconds) : 0
        return "copying \(table): \(done)/\(total) rows (\(percent)%), \(rate) rows/s"
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

@available(*, unavailable, message: "A copy runs on one thread")
extension StoreCopier: Sendable {}
