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
        var report = DeviceImportReport(dryRun: dryRun)
        guard let first = try lines.next() else {
            throw DeviceLineParser.HeaderError(description: "the file is empty")
        }
        try DeviceLineParser.header(first.bytes)
        report.lines = 1
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
            while let (bytes, truncated) = try lines.next() {
                report.lines += 1
                if truncated {
                    report.refuse(line: report.lines, reason: "the line is longer than \(lines.maxLineBytes) bytes",
                                  maskedToken: nil)
                    continue
                }
                do {
                    switch try parser.parse(bytes) {
                    case .device(let record):
                        batch.append(record)
                        batchLines.append(report.lines)
                    case .header, .blank, .end:
                        continue
                    }
                } catch {
                    report.refuse(line: report.lines, reason: error.reason, maskedToken: error.maskedToken)
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
