import Foundation

/// Bulk export and import of devices (docs/DATA-FORMAT.md): the SQLite and PostgreSQL backends implement it; the
/// CLI (`push-server export`/`import`) and the admin API reach it with `store as? DeviceTransfer`.
package protocol DeviceTransfer: Sendable {
    /// Reads every device of `instanceID` (every instance when nil) whose position is above `after`, in position
    /// order, inside one read snapshot (SQLite: one read transaction; PostgreSQL: REPEATABLE READ) on a connection
    /// of its own, so the export is consistent and the store's own readers are not held. Pages of up to `pageSize`
    /// records go to `page`, called on that connection's thread; it may block (that is the backpressure of a slow
    /// consumer); it returns whether to go on, or throws to stop the export, which then rethrows it. Memory stays
    /// at one page.
    func exportDevices(
        instanceID: String?, after: Int64, pageSize: Int, page: @escaping @Sendable ([ExportedDevice]) throws -> Bool
    ) async throws

    /// Imports records into `instanceID` in one transaction, keyed by (platform, token) as `DeviceImportPlanner`
    /// decides: new devices are created (with the record's id when it is free), existing ones take the record's data
    /// and keep their id. With `dryRun` the same decisions are made against the same state and nothing is written.
    /// Records must be validated already (tokens in the store's form, interest names); their `instanceID` is ignored.
    /// `audit`, when given (and not `dryRun`), makes the audit entry from the batch's outcomes; it is appended in
    /// the batch's transaction, so the entry is stored exactly when the batch is.
    /// - Returns: one outcome per record, in order.
    func importDevices(
        _ records: [DeviceRecord], into instanceID: String, caps: DeviceImportCaps, dryRun: Bool,
        audit: (@Sendable ([DeviceImportOutcome]) -> AuditEntry)?
    ) async throws -> [DeviceImportOutcome]
}

extension DeviceTransfer {
    /// `importDevices` without an audit entry.
    package func importDevices(_ records: [DeviceRecord], into instanceID: String, caps: DeviceImportCaps, dryRun: Bool)
        async throws -> [DeviceImportOutcome]
    {
        try await importDevices(records, into: instanceID, caps: caps, dryRun: dryRun, audit: nil)
    }
}
