import Foundation
import Logging
import PostgreSQLStore
import PushStore
import SQLiteStore
import StoreCopy

/// `push-server copy-store`: moves every table between SQLite and PostgreSQL (docs/OPERATIONS.md, "Outgrowing one
/// machine"), then verifies the target table by table.
enum CopyStoreCommand: Command {
    static let usage = """
        Usage: push-server copy-store --from CONFIG|SQLITE-FILE --to CONFIG [--replace]

        Copies everything in one store into another of the other kind (SQLite to PostgreSQL or back): devices,
        interests, users, Live Activity tokens, publishes with their counters and progress, reporting events, the
        webhook outbox, APNs provider tokens, the invalidation log and the per-instance counts.

        --from     a config file (its storage section) or a SQLite database file
        --to       a config file; its store is created (migrated) if needed and must hold no rows
        --replace  delete everything in the target first instead of refusing a non-empty one

        The source is read in one snapshot (a SQLite read transaction, a PostgreSQL REPEATABLE READ READ ONLY
        transaction), so servers may keep running on it, but what they write after the copy began is not copied:
        stop them for the final copy. The target is written in one transaction: after a failure it is unchanged.
        Afterwards each table's row count and SHA-256 over its rows are compared on both sides and printed.
        Progress goes to standard error. Exit status 1 when a check refuses, the copy fails or a table differs.
        """

    static let booleanFlags: Set<String> = ["replace"]

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["from", "to", "replace"])
        let from = try arguments.require("from")
        let (targetConfig, _) = try ServerConfig.load(path: try arguments.require("to"))
        let replace = arguments.has("replace")
        do {
            let source = try openSource(from)
            // Before the target is created: a store of the same kind is not this command's job.
            if source.backend == .sqlite, targetConfig.storage.backend == .sqlite {
                throw StoreCopyError.sameBackend(.sqlite)
            }
            if source.backend == .postgresql, targetConfig.storage.backend == .postgresql {
                throw StoreCopyError.sameBackend(.postgresql)
            }
            try await migrate(targetConfig.storage)
            let target = try openTarget(targetConfig.storage)
            Console.err("copy-store: \(source.backend) -> \(target.backend)")
            let copier = StoreCopier(source: source, target: target, replace: replace) {
                Console.err("copy-store: \($0)")
            }
            let report = try copier.run()
            Console.out(table(report))
            guard report.matches else {
                Console.err("copy-store: verification FAILED: the target differs from the source (see the table)")
                return .failure
            }
            return .ok
        } catch let error as StoreCopyError {
            Console.err("copy-store: \(error)")
            return .failure
        }
    }

    /// A SQLite file (recognised by its header) or a config naming the store.
    static func openSource(_ path: String) throws -> any StoreSide {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "permission denied" : "no such file"
            throw StoreCopyError.unreadableSource("\(path): \(reason)")
        }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        try? handle.close()
        if header == Data("SQLite format 3\0".utf8) { return try SQLiteSide(path: path, asSource: true) }
        let config: ServerConfig
        do {
            (config, _) = try ServerConfig.load(path: path)
        } catch {
            let issues = error.issues.map { $0.description }.joined(separator: "; ")
            throw StoreCopyError.unreadableSource("\(path) is neither a SQLite database nor a valid config (\(issues))")
        }
        switch config.storage.backend {
        case .sqlite: return try SQLiteSide(path: config.storage.path, asSource: true)
        case .postgresql:
            return try PostgreSQLSide(
                connectionString: config.storage.postgresql?.connectionString ?? "",
                asSource: true)
        }
    }

    /// Opens the target store once as a server would (creating and migrating it), then closes it. A SQLite file a
    /// server has open is refused here (its lock file is held).
    static func migrate(_ storage: ServerConfig.Storage) async throws {
        let store = try await Application.openStore(storage, logger: .disabled, healthEvents: { _ in })
        try await store.close()
    }

    static func openTarget(_ storage: ServerConfig.Storage) throws -> any StoreSide {
        switch storage.backend {
        case .sqlite: return try SQLiteSide(path: storage.path, asSource: false)
        case .postgresql:
            return try PostgreSQLSide(
                connectionString: storage.postgresql?.connectionString ?? "",
                asSource: false)
        }
    }

    /// The verification table: per table rows and the first 16 hex digits of each side's SHA-256.
    static func table(_ report: StoreCopier.Report) -> String {
        func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
            let fill = String(repeating: " ", count: max(0, width - text.count))
            return right ? fill + text : text + fill
        }
        var lines = [
            pad("table", 22) + pad("source rows", 13, right: true) + pad("target rows", 13, right: true)
                + "  " + pad("source sha-256", 18) + pad("target sha-256", 18) + "result"
        ]
        for row in report.tables {
            lines.append(
                pad(row.table, 22) + pad(String(row.sourceRows), 13, right: true)
                    + pad(String(row.targetRows), 13, right: true) + "  "
                    + pad(String(row.sourceChecksum.prefix(16)), 18) + pad(String(row.targetChecksum.prefix(16)), 18)
                    + (row.matches ? "ok" : "MISMATCH"))
        }
        lines.append(
            "copied in \(String(format: "%.1f", report.copySeconds)) s, verified in "
                + "\(String(format: "%.1f", report.verifySeconds)) s: "
                + (report.matches ? "every table matches" : "MISMATCH"))
        return lines.joined(separator: "\n")
    }
}
