import Foundation
import PushStore

/// Imports a device file (docs/DATA-FORMAT.md) into one instance: reads it line by line, refuses bad lines with
/// their line number (they never stop the rest), and hands the good ones to the store in batches, one transaction
/// each. Memory: one batch of records and the report's listed refusals.
struct DeviceImporter {
    let store: any DeviceTransfer
    let parser: DeviceLineParser
    let caps: DeviceImportCaps
    let dryRun: Bool
    /// Devices per store transaction. Default 2,000: large enough that commits cost little, small enough that one
    /// batch holds the writer for a fraction of a second.
    var batchSize = 2000
    /// Called after each batch with the report so far.
    var progress: (DeviceImportReport) -> Void = { _ in }
    /// Where the import records itself (nil: nowhere, as in tests of the conversion alone).
    var audit: DeviceImportAudit?

    /// - Throws: `DeviceLineParser.HeaderError` when the first line is not a version-1 header (nothing is read
    ///   further); what the store or the reader threw (batches before it are committed, unless `dryRun`).
    func run(_ lines: inout LineSplitter) async throws -> DeviceImportReport {
        do {
            guard let first = try lines.next() else {
                throw DeviceLineParser.HeaderError(description: "the file is empty")
            }
            try DeviceLineParser.header(first.bytes)
        } catch {
            await recordFailure(error, DeviceImportReport(dryRun: dryRun))
            throw error
        }
        var number = 1
        let maxLineBytes = lines.maxLineBytes
        return try await importLines(firstLine: 1) {
            guard let (bytes, truncated) = try lines.next() else { return nil }
            number += 1
            if truncated {
                return (
                    number,
                    .failure(
                        DeviceLineParser.Refusal(
                            reason: "the line is longer than \(maxLineBytes) bytes", maskedToken: nil))
                )
            }
            return (number, .success(bytes))
        }
    }

    /// Imports rows another provider's export gave (`ProviderRows`): each is a device line already converted, or
    /// the converter's refusal, numbered by its line or row in the provider's file. The device lines get the
    /// same parser, caps and batches as a device file's.
    func run(converted rows: inout some ProviderRows) async throws -> DeviceImportReport {
        try await importLines(firstLine: 0) {
            guard let row = try rows.next() else { return nil }
            return (row.line, row.device.map { ArraySlice($0.serialized()) })
        }
    }

    /// The loop both forms share. `next` gives each line's number and its bytes, or why it is refused.
    ///
    /// A full batch is sent when the next device line arrives, so the last batch is known as the last when it is
    /// sent and carries the import's audit entry (its counts completed from its outcomes inside its transaction).
    private func importLines(
        firstLine: Int, next: () throws -> (Int, Result<ArraySlice<UInt8>, DeviceLineParser.Refusal>)?
    ) async throws -> DeviceImportReport {
        var report = DeviceImportReport(dryRun: dryRun)
        report.lines = firstLine
        var batch: [DeviceRecord] = []
        var batchLines: [Int] = []
        batch.reserveCapacity(batchSize)
        // One batch is written while the next is parsed: the store's thread and this task work side by side.
        var pending: (task: Task<[DeviceImportOutcome], any Error>, batch: [DeviceRecord], lines: [Int])?
        var auditedInBatch = false
        func send(last: Bool) async throws {
            if let previous = pending {
                pending = nil
                record(try await previous.task.value, previous.batch, previous.lines, into: &report)
            }
            guard !batch.isEmpty else { return }
            let (store, records, instanceID, caps, dryRun) = (
                self.store, batch, parser.instance.id, self.caps, self.dryRun
            )
            var entry: (@Sendable ([DeviceImportOutcome]) -> AuditEntry)?
            if last, !dryRun, let audit {
                let before = report
                entry = { outcomes in
                    var final = before
                    for outcome in outcomes { final.record(outcome, line: 0, maskedToken: nil) }
                    return audit.entry(DeviceImportAudit.success(final))
                }
                auditedInBatch = true
            }
            pending = (
                // Bulk work: at the default priority, not the request's (`EventLoop.requestPriority`).
                Task(priority: .medium) { [entry] in
                    try await store.importDevices(records, into: instanceID, caps: caps, dryRun: dryRun, audit: entry)
                }, batch, batchLines
            )
            batch.removeAll(keepingCapacity: true)
            batchLines.removeAll(keepingCapacity: true)
        }
        do {
            while let (number, content) = try next() {
                report.lines = max(report.lines, number)
                let record: DeviceRecord
                do {
                    switch try parser.parse(try content.get()) {
                    case .device(let parsed): record = parsed
                    case .header, .blank, .end: continue
                    }
                } catch {
                    report.refuse(line: number, reason: error.reason, maskedToken: error.maskedToken)
                    continue
                }
                if batch.count >= batchSize { try await send(last: false) }
                batch.append(record)
                batchLines.append(number)
            }
            try await send(last: true)
            try await send(last: true)
        } catch {
            // A batch still being written is waited for, so nothing runs on after the import returns; what it
            // committed is counted in the failure's entry (a failed last batch took its entry with it).
            if let previous = pending, let outcomes = try? await previous.task.value {
                record(outcomes, previous.batch, previous.lines, into: &report)
            }
            await recordFailure(error, report)
            throw error
        }
        if !auditedInBatch, let audit {
            // Nothing was written (a dry run, no device in the file): the entry is a change of its own.
            try await audit.log.appendAudit(audit.entry(DeviceImportAudit.success(report)))
        }
        return report
    }

    /// Appends the entry of a failed import, alone: the failure's transaction, if it had one, was rolled back. An
    /// audit log that cannot be written either is left to the error the import throws.
    private func recordFailure(_ error: any Error, _ report: DeviceImportReport) async {
        guard let audit else { return }
        try? await audit.log.appendAudit(audit.entry(DeviceImportAudit.failure(error, report)))
    }

    private func record(
        _ outcomes: [DeviceImportOutcome], _ batch: [DeviceRecord], _ lines: [Int],
        into report: inout DeviceImportReport
    ) {
        for (index, outcome) in outcomes.enumerated() {
            report.record(
                outcome, line: lines[index], maskedToken: DeviceInvalidation.mask(token: batch[index].device.token))
        }
        progress(report)
    }
}
