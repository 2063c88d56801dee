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
        while let (bytes, truncated) = try lines.next() {
            report.lines += 1
            if truncated {
                report.refuse(line: report.lines, reason: "the line is longer than \(lines.maxLineBytes) bytes", maskedToken: nil)
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
            if batch.count >= batchSize {
                try await flush(&batch, &batchLines, into: &report)
            }
        }
        try await flush(&batch, &batchLines, into: &report)
        return report
    }

    private func flush(_ batch: inout [DeviceRecord], _ lines: inout [Int], into report: inout DeviceImportReport) async throws {
        guard !batch.isEmpty else { return }
        let outcomes = try await store.importDevices(batch, into: parser.instance.id, caps: caps, dryRun: dryRun)
        for (index, outcome) in outcomes.enumerated() {
            report.record(outcome, line: lines[index], maskedToken: DeviceInvalidation.mask(token: batch[index].device.token))
        }
        batch.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        progress(report)
    }
}
