import Foundation
import JSON
import PushStore

/// `push-server audit list`: the audit log read from the store the config names, one JSON line per entry (the
/// fields of `GET …/audit`), oldest first: one instance's with `--instance`, the whole server's without (each line
/// then names its `instanceId`). Read-only: the log cannot be changed from here either.
enum AuditCommand: Command {
    static let usage = """
        Usage: push-server audit list --config FILE [--instance ID] [--action ACTION] [--since SEQ] [--limit N]

        Prints the audit log, one JSON line per entry (seq, time, actor, source, action, target, outcome, requestId),
        oldest first: the instance's with --instance; without it every instance's (the server-wide log, each line
        with its instanceId). --action keeps one action (key.create, devices.import, …). Entries after SEQ (default
        0), at most N (default 1000, at most 100000).
        Exit 0 on success, 1 when the store cannot be read, 2 for usage errors.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "action", "since", "limit"])
        guard arguments.positionals == ["list"] else { throw UsageError("give one action: list") }
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"), validateKey: { _ in nil })
        let action = try arguments["action"].map { text throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("--action must name an action") }
            return text
        }
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
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled,
            healthEvents: { _ in })
        var instanceID: String?
        if let id = arguments["instance"] {
            instanceID = try await CommandInstance.find(id, config: config, closingOnFailure: store).id
        }
        do {
            // Read in pages, so a long log is never one large result.
            var cursor = since
            var left = limit
            while left > 0 {
                let size = min(left, PageQuery.maxLimit)
                let page = try await store.auditEntries(
                    instanceID: instanceID, action: action, after: cursor, limit: size)
                for entry in page { Console.out(line(entry, serverWide: instanceID == nil).jsonText) }
                guard let last = page.last, page.count == size else { break }
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

    /// The route's fields, and the instance's id when the listing is the server's.
    static func line(_ entry: AuditEntry, serverWide: Bool) -> JSONValue {
        guard serverWide, case .object(var fields) = AuditAPI.render(entry) else { return AuditAPI.render(entry) }
        fields["instanceId"] = .string(entry.instanceID)
        return .object(fields)
    }
}
