import Foundation
import JSON
import Logging
import PushStore

/// `push-server import`: a device file (docs/DATA-FORMAT.md) into one instance of the configured store.
enum ImportCommand: Command {
    static let usage = """
        Usage: push-server import --config FILE --instance ID [--dry-run] [--json] [--batch N]
                                  [--from parse|onesignal|sns [--map RULES] [--sns-platform APNS|APNS_SANDBOX|GCM]] FILE|-

        Imports a device file (docs/DATA-FORMAT.md; what `push-server export` writes) into the instance, in the store
        the config names, beside a running server (every node sees the devices at once). Devices are keyed by
        (platform, token): a new one is created, a known one takes the file's data and keeps its id, an identical one
        is left alone, so importing a file again changes nothing. Every line gets the device API's checks and caps
        (limits.maxDevicesPerInstance, maxDevicesPerUser, maxSubscriptionsPerInstance, maxInterestsPerInstance); a
        refused line is reported with its line number, reason and masked token and never stops the rest. Writes in
        batches of --batch devices (default 2000), one transaction each. Into a SQLite store no server is writing
        to, --batch 20000 is faster (each batch holds the database's write lock for seconds, too long beside a server).
        --dry-run writes nothing and reports what would happen. Each run is one entry (devices.import) in the
        instance's audit log, actor cli:USER, outcome its counts (docs/OPERATIONS.md, "Many apps: audit log"). Prints a summary and each refused line (--json: the
        report as JSON) on standard output; progress on standard error when it is a terminal.
        Exit 0 when no line was refused, 1 when some were (or on a failure), 2 for usage errors or a file that is not
        a device file.
        --from reads another provider's export instead (Parse Server _Installation JSON, OneSignal's players CSV, the
        JSON of `aws sns list-endpoints-by-platform-application`), each row converted to a device line and imported
        the same way; refused rows are reported with their line in that file. --map (space-separated rules):
        tag:KEY=INTEREST (OneSignal: the tag KEY gives the interest INTEREST, `{value}` in it replaced by the tag's
        value) and CustomUserData=user (SNS). Mappings and what is dropped: docs/OPERATIONS.md.
        """

    static let booleanFlags: Set<String> = ["dry-run", "json"]

    /// Devices per transaction unless --batch says otherwise (docs/BENCHMARKS.md, "Device export and import").
    /// PostgreSQL: since the counts are kept per statement (schema step 14) a batch costs no more per device as it
    /// grows; 2,000 holds the instance's count row, which registrations also lock, for a fraction of a second.
    /// SQLite: a commit writes each page it touched once and new devices land on random pages of the token index,
    /// so 20,000 per batch is faster (200,000 devices: 15.5 s against 25.0 s), but it holds the write lock for
    /// seconds (4 s per batch at 1M on a loaded machine), near a running server's 5 s busy timeout: 2,000 unless
    /// the operator says otherwise.
    static let defaultBatch = 2000

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "dry-run", "json", "batch", "from", "map", "sns-platform"])
        guard arguments.positionals.count == 1 else { throw UsageError("give one FILE (or - for standard input)") }
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"))
        let instanceID = try arguments.require("instance")
        let batchSize =
            try arguments["batch"].map { text throws(UsageError) in
                guard let value = Int(text), (1...50_000).contains(value) else {
                    throw UsageError("--batch must be 1-50000")
                }
                return value
            } ?? Self.defaultBatch
        let provider = try arguments["from"].map { name throws(UsageError) in
            guard let provider = Provider(rawValue: name) else {
                throw UsageError("--from must be parse, onesignal or sns")
            }
            return provider
        }
        guard provider != nil || (arguments["map"] == nil && arguments["sns-platform"] == nil) else {
            throw UsageError("--map and --sns-platform go with --from")
        }
        let providerOptions = try provider.map { provider throws(UsageError) in
            try ProviderImportOptions.parse(
                map: arguments["map"], snsPlatform: arguments["sns-platform"], for: provider)
        }
        let path = arguments.positionals[0]
        let input: Int32 = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw UsageError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { if input != 0 { close(input) } }
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled, healthEvents: { _ in })
        let instance = try await CommandInstance.find(instanceID, config: config, closingOnFailure: store)
        guard let transfer = store as? any DeviceTransfer else {
            try? await store.close()
            throw UsageError("the configured store cannot import devices")
        }
        let meter = ProgressMeter(verb: arguments.has("dry-run") ? "checked" : "imported")
        var importer = DeviceImporter(
            store: transfer,
            parser: DeviceLineParser(
                instance: instance, now: Date(),
                liveActivityLimits: LiveActivityLimits(
                    maxStartTokensPerDevice: config.limits.maxLiveActivityStartTokensPerDevice,
                    maxActivitiesPerDevice: config.limits.maxLiveActivitiesPerDevice)),
            caps: DeviceImportCaps(
                maxDevicesPerInstance: instance.deviceCap(config.limits),
                maxDevicesPerUser: config.limits.maxDevicesPerUser,
                interests: config.limits.interestLimits),
            dryRun: arguments.has("dry-run"))
        importer.batchSize = batchSize
        importer.progress = { meter.update($0.devices) }
        importer.audit = DeviceImportAudit(
            log: store, actor: AuditActor.commandLine(), instanceID: instance.id,
            from: provider, now: { Date() })
        let readChunk: () throws -> [UInt8]? = {
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n >= 0 { return n == 0 ? nil : Array(chunk[..<n]) }
                if errno != EINTR { throw OutputFileError(message: "read failed: \(String(cString: strerror(errno)))") }
            }
        }
        var lines = LineSplitter(maxLineBytes: DeviceLineParser.maxLineBytes, nextChunk: readChunk)
        let report: DeviceImportReport
        var notes: [String: Int] = [:]
        do {
            if let provider, let providerOptions {
                (report, notes) = try await importer.run(from: provider, options: providerOptions, nextChunk: readChunk)
            } else {
                report = try await importer.run(&lines)
            }
            try await store.close()
        } catch let error as ProviderFileError {
            try? await store.close()
            Console.err("push-server import: \(path): \(error)")
            return .usage
        } catch let error as DeviceLineParser.HeaderError {
            try? await store.close()
            Console.err("push-server import: \(path): \(error)")
            return .usage
        } catch {
            try? await store.close()
            meter.finish(nil)
            Console.err("push-server import: \(error)")
            return .failure
        }
        meter.finish(report.devices)
        if arguments.has("json") {
            Console.out(report.json(notes: notes).jsonText)
        } else {
            Console.out(report.summary)
            for (note, count) in notes.sorted(by: { $0.key < $1.key }) { Console.out("note: \(count) rows: \(note)") }
            for line in report.refusalLines { Console.out(line) }
            if report.refused > report.refusedLines.count {
                Console.out("… and \(report.refused - report.refusedLines.count) more refused lines")
            }
        }
        return report.refused == 0 ? .ok : .failure
    }
}
