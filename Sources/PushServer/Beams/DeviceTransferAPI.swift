import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import Locking
import PushStore

/// Beyond Beams, behind the instance secret: device export and import over HTTP (docs/DATA-FORMAT.md), for a running
/// server. The import writes to the store, so every node sees its devices at once.
///
/// - `GET /admin_api/v1/instances/{id}/devices/export[?after=CURSOR]`: the instance's device file as
///   `application/x-ndjson`, streamed (chunked) from one snapshot in constant memory; a slow client slows the
///   export, one that leaves stops it. With `&limit=N` (N ≤ 10,000): one page, the end line's `more` and `cursor`
///   saying whether and where the next starts (each page its own snapshot).
/// - `POST /admin_api/v1/instances/{id}/devices/import[?dryRun=true]` with a device file (header line first) of
///   at most 16 MiB: the import report (`DeviceImportReport.json`). Larger files go in several requests, each with
///   its header line. With `&from=parse|onesignal|sns` the body is that provider's export instead (what
///   `push-server import --from` reads; `&map=RULES` and `&snsPlatform=` as its `--map` and `--sns-platform`): the
///   same conversion, report (with the converters' `notes`) and dry run. A large provider export goes in parts
///   only where its format allows (OneSignal: repeat the CSV header in each part).
struct DeviceTransferAPI: Sendable {
    let app: AppContext

    static let maxPage = 10_000
    static let importBody = BodyLimit(maxBytes: 16 << 20)

    func register(into router: inout Router) {
        let base = "/admin_api/v1/instances/:instance/devices"
        let app = self.app
        router.get("\(base)/export", bodyLimit: .noBody) { try await export($0) }
        // The key is checked before a 16 MiB body is read (against the keys last read: admission cannot wait).
        router.post(
            "\(base)/import", bodyLimit: Self.importBody,
            admission: { request throws(BeamsError) in
                let instance = try app.instance(request)
                try app.admitChange(
                    request, instance, .instanceAdmin, action: DeviceImportAudit.action, target: instance.id)
            }
        ) { try await importDevices($0) }
    }

    func export(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try await authorized(request)
        let store = try transfer()
        var limit: Int?
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...Self.maxPage).contains(value) else {
                throw BeamsError(400, "Bad request", "`limit` must be a number between 1 and \(Self.maxPage)")
            }
            limit = value
        }
        var after: DeviceExportCursor?
        if let text = request.queryValue("after"), !text.isEmpty {
            guard let cursor = try? DeviceExportCursor.parse(text, instanceID: instance.id) else {
                throw BeamsError(400, "Bad request", "`after` is not a cursor of this instance's export")
            }
            after = cursor
        }
        var exporter = DeviceExporter(store: store, instanceID: instance.id, after: after)
        let headers: HTTPHeaders = ["Content-Type": "application/x-ndjson"]
        if let limit {
            exporter.pageSize = limit
            exporter.limit = limit
            let body = Locked<[UInt8]>([])
            _ = try await exporter.run(
                now: app.now(), write: { chunk in body.withLock { $0.append(contentsOf: chunk) } })
            return HTTPResponse(status: .ok, headers: headers, body: body.withLock { $0 })
        }
        // The whole instance: the store's export thread writes into the stream and waits while the client reads.
        let stream = HTTPBodyStream()
        let (now, logger) = (app.now(), app.logger)
        // Bulk work: at the default priority, not the request's (`EventLoop.requestPriority`).
        Task(priority: .medium) {
            do {
                _ = try await exporter.run(now: now, write: { try stream.write($0) })
                stream.finish()
            } catch is HTTPBodyStream.Closed {
                stream.finish(failed: true)
            } catch {
                logger.warning("Device export failed", ["instance": instance.id, "error": "\(error)"])
                stream.finish(failed: true)
            }
        }
        return .streamed(headers: headers, stream)
    }

    func importDevices(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        let actor = try await app.authorizeChange(
            request, instance, .instanceAdmin, action: DeviceImportAudit.action,
            target: instance.id)
        let store: any DeviceTransfer
        let dryRun: Bool
        let provider: (Provider, ProviderImportOptions)?
        do {
            store = try transfer()
            switch request.queryValue("dryRun") {
            case nil, "false"?: dryRun = false
            case "true"?: dryRun = true
            default: throw BeamsError(400, "Bad request", "`dryRun` must be true or false")
            }
            provider = try providerOptions(request)
        } catch {
            // Refused before it began: recorded with the answer's reason, as a failure after it began is.
            let entry = actor.entry(
                instance.id, DeviceImportAudit.action, instance.id, at: app.now(),
                outcome: DeviceImportAudit.failure(error, DeviceImportReport(dryRun: false)))
            try? await app.store.appendAudit(entry)
            throw error
        }
        let limits = app.config.limits
        var importer = DeviceImporter(
            store: store,
            parser: DeviceLineParser(
                instance: instance, now: app.now(),
                liveActivityLimits: LiveActivityLimits(
                    maxStartTokensPerDevice: limits.maxLiveActivityStartTokensPerDevice,
                    maxActivitiesPerDevice: limits.maxLiveActivitiesPerDevice)),
            caps: DeviceImportCaps(
                maxDevicesPerInstance: instance.deviceCap(limits),
                maxDevicesPerUser: limits.maxDevicesPerUser, interests: limits.interestLimits),
            dryRun: dryRun)
        importer.audit = DeviceImportAudit(
            log: app.store, actor: actor, instanceID: instance.id, from: provider?.0,
            now: { [app] in app.now() })
        let body = Locked<[UInt8]?>(request.body)
        let nextChunk: @Sendable () -> [UInt8]? = {
            body.withLock { chunk in
                defer { chunk = nil }; return chunk
            }
        }
        do {
            let report: DeviceImportReport
            var notes: [String: Int] = [:]
            if let (provider, options) = provider {
                (report, notes) = try await importer.run(from: provider, options: options, nextChunk: nextChunk)
            } else {
                var lines = LineSplitter(maxLineBytes: DeviceLineParser.maxLineBytes, nextChunk: nextChunk)
                report = try await importer.run(&lines)
            }
            app.logger.info(
                "Devices imported",
                [
                    "instance": instance.id, "created": String(report.created), "updated": String(report.updated),
                    "unchanged": String(report.unchanged), "refused": String(report.refused), "dry_run": String(dryRun),
                    "from": provider?.0.rawValue ?? "device file",
                ])
            return .json(report.json(notes: notes))
        } catch let error as DeviceLineParser.HeaderError {
            throw BeamsError(400, "Bad request", "Not a device file: \(error.description)")
        } catch let error as ProviderFileError {
            throw BeamsError(400, "Bad request", "Not a \(provider?.0.rawValue ?? "") export: \(error.description)")
        }
    }

    /// `from`, `map` and `snsPlatform`: another provider's export and its conversion options (nil: a device file).
    private func providerOptions(_ request: HTTPRequest) throws(BeamsError) -> (Provider, ProviderImportOptions)? {
        guard let name = request.queryValue("from") else {
            guard request.queryValue("map") == nil, request.queryValue("snsPlatform") == nil else {
                throw BeamsError(400, "Bad request", "`map` and `snsPlatform` go with `from`")
            }
            return nil
        }
        guard let provider = Provider(rawValue: name) else {
            throw BeamsError(400, "Bad request", "`from` must be parse, onesignal or sns")
        }
        do {
            return (
                provider,
                try ProviderImportOptions.parse(
                    map: request.queryValue("map"), snsPlatform: request.queryValue("snsPlatform"), for: provider)
            )
        } catch {
            // The options' messages name the command-line flags; the route's parameters are named here.
            throw BeamsError(
                400, "Bad request",
                error.message
                    .replacingOccurrences(of: "--sns-platform", with: "`snsPlatform`")
                    .replacingOccurrences(of: "--map", with: "`map`"))
        }
    }

    private func authorized(_ request: HTTPRequest) async throws(BeamsError) -> InstanceConfig {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .instanceAdmin)
        return instance
    }

    private func transfer() throws(BeamsError) -> any DeviceTransfer {
        guard let store = app.store as? any DeviceTransfer else {
            throw BeamsError(501, "Not implemented", "This store cannot export or import devices")
        }
        return store
    }
}
