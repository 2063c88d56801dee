import BeamsModel
import Foundation
import PushStore

/// How an import records itself in the audit log (docs/OPERATIONS.md, "Many apps: audit log"): one entry per import,
/// `devices.import` on the instance, its outcome the report's counts. The importer writes it in the transaction of
/// the import's last batch (so it is stored exactly when the last devices are), alone when no batch is written (a dry
/// run, a file without devices), and alone after a failure, with what the batches before it committed.
struct DeviceImportAudit: Sendable {
    /// Where an entry that rides in no batch is appended.
    let log: any AuditLog
    /// The entry with this outcome (who, where from, the request id and the time are the caller's).
    let entry: @Sendable (_ outcome: String) -> AuditEntry

    /// The audit log's action for an import.
    static let action = "devices.import"

    /// An entry made by `actor` for an import into `instanceID`; `from` names another provider's export.
    init(log: any AuditLog, actor: AuditActor, instanceID: String, from: Provider?, now: @escaping @Sendable () -> Date)
    {
        self.log = log
        let suffix = from.map { "; from \($0.rawValue)" } ?? ""
        entry = { outcome in actor.entry(instanceID, Self.action, instanceID, at: now(), outcome: outcome + suffix) }
    }

    /// `success: created 3, updated 1, unchanged 0, refused 1` (with the dry run's note).
    static func success(_ report: DeviceImportReport) -> String { "success: \(report.summary)" }

    /// `failed: <why>`, with what batches committed before the failure, if any did. Bounded: a store's error text
    /// can be long.
    static func failure(_ error: any Error, _ report: DeviceImportReport) -> String {
        var why: String
        switch error {
        case let error as DeviceLineParser.HeaderError: why = "not a device file: \(error.description)"
        case let error as ProviderFileError: why = "not a readable export: \(error.description)"
        case let error as BeamsError: why = error.detail
        default: why = "\(error)"
        }
        if why.count > 300 { why = String(why.prefix(300)) + "…" }
        let committed = report.dryRun || report.devices == 0 ? "" : "; committed before it: \(report.summary)"
        return "failed: \(why)\(committed)"
    }
}
