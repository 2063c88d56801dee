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

    /// - Throws: `DeviceLineParser.HeaderError` when the first line is not a version-1 header (nothing is read
    ///   further); what the store or the reader threw (batches before it are committed, unless `dryRun`).
    func run(_ lines: inout LineSplitter) async throws -> DeviceImportReport {
        guard let first = try lines.next() else {
            throw DeviceLineParser.HeaderError(description: "the file is empty")
        }
        try DeviceLineParser.header(first.bytes)
        var number = 1
        let maxLineBytes = lines.maxLineBytes
        return try await importLines(firstLine: 1) {
            guard let (bytes, truncated) = try lines.next() else { return nil }
            number += 1
            if truncated {
                return (number, .failure(DeviceLineParser.Refusal(
                    reason: "the line is longer than \(maxLineBytes) bytes", maskedToken: nil)))
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
        func send() async throws {
            if let previous = pending {
                pending = nil
                record(try await previous.task.value, previous.batch, previous.lines, into: &report)
            }
            guard !batch.isEmpty else { return }
            let (store, records, instanceID, caps, dryRun) = (self.store, batch, parser.instance.id, self.caps, self.dryRun)
            pending = (Task { try await store.importDevices(records, into: instanceID, caps: caps, dryRun: dryRun) },
                       batch, batchLines)
            batch.removeAll(keepingCapacity: true)
            batchLines.removeAll(keepingCapacity: true)
        }
        do {
            while let (number, content) = try next() {
                report.lines = max(report.lines, number)
                do {
                    switch try parser.parse(try content.get()) {
                    case .device(let record):
                        batch.append(record)
                        batchLines.append(number)
                    case .header, .blank, .end:
                        continue
                    }
                } catch {
                    report.refuse(line: number, reason: error.reason, maskedToken: error.maskedToken)
                }
                if batch.count >= batchSize { try await send() }
            }
            try await send()
            try await send()
        } catch {
            // A batch still being written is waited for, so nothing runs on after the import returns.
            _ = try? await pending?.task.value
            throw error
        }
        return report
    }

    private func record(_ outcomes: [DeviceImportOutcome], _ batch: [DeviceRecord], _ lines: [Int],
                        into report: inout DeviceImportReport) {
        for (index, outcome) in outcomes.enumerated() {
            report.record(outcome, line: lines[index], maskedToken: DeviceInvalidation.mask(token: batch[index].device.token))
        }
        progress(report)
    }
}
