import Foundation
import JSON
import PushStore

/// `push-server audit list`: an instance's audit log read from the store the config names, one JSON line per entry
/// (the fields of `GET …/audit`), oldest first. Read-only: the log cannot be changed from here either.
enum AuditCommand: Command {
    static let usage = """
    Usage: push-server audit list --config FILE --instance ID [--since SEQ] [--limit N]

    Prints the instance's audit log, one JSON line per entry (seq, time, actor, source, action, target, outcome,
    requestId), oldest first: entries after SEQ (default 0), at most N (default 1000, at most 100000).
    Exit 0 on success, 1 when the store cannot be read, 2 for usage errors.
    """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "since", "limit"])
        guard arguments.positionals == ["list"] else { throw UsageError("give one action: list") }
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"), validateKey: { _ in nil })
        let instanceID = try arguments.require("instance")
        guard let instance = config.instance(instanceID) else { throw UsageError("no instance \(instanceID) in the config") }
        var since: Int64 = 0
        if let text = arguments["since"] {
            guard let value = Int64(text), value >= 0 else { throw UsageError("--since must be a sequence number") }
            since = value
        }
        var limit = 1000
        if let text = arguments["limit"] {
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw UsageError("--limit must be between 1 and 100000")
            }
            limit = value
        }
        let store = try await Application.openStore(config.storage, exclusive: false, logger: .disabled,
                                                    healthEvents: { _ in })
        do {
            // Read in pages, so a long log is never one large result.
            var cursor = since
            var left = limit
            while left > 0 {
                let page = try await store.auditEntries(instanceID: instance.id, after: cursor, limit: min(left, 1000))
                for entry in page { Console.out(AuditAPI.render(entry).jsonText) }
                guard let last = page.last, page.count == min(left, 1000) else { break }
                cursor = last.seq
                left -= page.count
            }
            try? await store.close()
            return .ok
        } catch {
            try? await store.close()
            Console.err("push-server audit list: the store cannot be read: \(error)")
            return .failure
        }
    }
}
