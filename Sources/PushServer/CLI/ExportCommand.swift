import Foundation
import PushStore

/// `push-server export`: the devices of one instance or all, as a device file (docs/DATA-FORMAT.md).
enum ExportCommand: Command {
    static let usage = """
        Usage: push-server export --config FILE [--instance ID] [--output FILE|-] [--after CURSOR]

        Writes every device of the instance (of every instance without --instance) as NDJSON (docs/DATA-FORMAT.md):
        a header line, one line per device (token or subscription, interests, user, metadata, time zone, Live
        Activity tokens, last delivery result), an end line. One consistent snapshot of the store the config names,
        read beside a running server without stopping it. --output defaults to - (standard output); a file is created
        mode 0600 (it holds tokens). --after resumes behind a device: pass the `cursor` of the last line a cut-short
        export wrote. Progress goes to standard error when it is a terminal.
        Exit 0 when the end line was written, 1 on a failure, 2 for usage errors.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "output", "after", "page-size"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"), validateKey: { _ in nil })
        let instanceID = arguments["instance"]
        var after: DeviceExportCursor?
        if let text = arguments["after"] {
            do {
                after = try DeviceExportCursor.parse(text, instanceID: instanceID)
            } catch .otherExport {
                throw UsageError("--after is a cursor of another export (another instance, or all instances)")
            } catch {
                throw UsageError("--after is not a cursor of a device file")
            }
        }
        let pageSize =
            try arguments["page-size"].map { text throws(UsageError) in
                guard let value = Int(text), (1...100_000).contains(value) else {
                    throw UsageError("--page-size must be 1-100000")
                }
                return value
            } ?? 1000
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled, healthEvents: { _ in })
        if let instanceID { _ = try await CommandInstance.find(instanceID, config: config, closingOnFailure: store) }
        let output: OutputFile
        do {
            output = try OutputFile(path: arguments["output"] ?? "-")
        } catch {
            try? await store.close()
            throw error
        }
        guard let transfer = store as? any DeviceTransfer else {
            try? await store.close()
            throw UsageError("the configured store cannot export devices")
        }
        var exporter = DeviceExporter(store: transfer, instanceID: instanceID, after: after)
        exporter.pageSize = pageSize
        let meter = ProgressMeter(verb: "exported")
        do {
            let summary = try await exporter.run(
                now: Date(), write: { try output.write($0) }, progress: { meter.update($0) })
            try output.close()
            try await store.close()
            meter.finish(summary.devices)
            return .ok
        } catch {
            try? await store.close()
            meter.finish(nil)
            Console.err("push-server export: \(error)")
            return .failure
        }
    }
}
