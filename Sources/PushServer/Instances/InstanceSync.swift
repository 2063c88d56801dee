import BeamsModel
import Clocks
import ConfigModel
import Foundation
import HTTPClient
import JWTSigner
import Lifecycle
import Locking
import Logging
import Observability
import PublishEngine
import PushStore

/// Keeps the `InstanceDirectory` equal to the config file's instances plus the store's: reads the store's set
/// version when woken (PostgreSQL's NOTIFY from any node, a change made here, a reload) and at least every
/// `pollInterval`, and rebuilds only what changed (docs/OPERATIONS.md, "Many apps: run-time instances").
///
/// A stored instance that cannot be used on this node (its definition does not open with this node's
/// `keys.encryptionKey`, or names a key file this node lacks) is logged and not served here; when it was served,
/// the version it was served at stays.
actor InstanceSync: Service {
    nonisolated let name = "instances"
    nonisolated let store: any InstanceDefinitionStore
    nonisolated let directory: InstanceDirectory
    nonisolated let seal: SecretSeal?
    /// How senders are built (nil: look-ups only, no senders, as in API tests).
    nonisolated let senders: PlatformSenderSettings?
    /// Where an HMS sender keeps its OAuth tokens (shared by every node).
    nonisolated let providerTokens: (any ProviderTokenStorage)?
    nonisolated let policy: DestinationPolicy
    nonisolated let environment: [String: String]
    nonisolated let validateKey: @Sendable (String) -> String?
    nonisolated let logger: Logger
    nonisolated let metrics: Metrics
    /// How often the store's version is read without a wake-up: the bound on how late a change is seen.
    nonisolated let pollInterval: Duration
    /// The config file's instances by lower-cased id, with what they were read from (a reload replaces them).
    private var configInstances: [String: (config: InstanceConfig, fingerprint: String)]
    /// Each config-file instance's place in the file (lower-cased id): the directory lists them in that order.
    private var configRanks: [String: Int]
    /// Stored ids already reported as shadowed or unusable at a version, so each is logged once.
    private var reported: Set<String> = []
    /// The config file's instance ids (lower-cased), readable from any thread: read-only through the API.
    private nonisolated let fileIDsState: Locked<Set<String>>
    private nonisolated let wakeups: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)

    init(
        store: any InstanceDefinitionStore, directory: InstanceDirectory, seal: SecretSeal?,
        senders: PlatformSenderSettings?, providerTokens: (any ProviderTokenStorage)?, policy: DestinationPolicy,
        environment: [String: String], validateKey: @escaping @Sendable (String) -> String?,
        configInstances: [InstanceConfig], fingerprints: [String: String], logger: Logger, metrics: Metrics,
        pollInterval: Duration
    ) {
        self.store = store
        self.directory = directory
        self.seal = seal
        self.senders = senders
        self.providerTokens = providerTokens
        self.policy = policy
        self.environment = environment
        self.validateKey = validateKey
        self.logger = logger
        self.metrics = metrics
        self.pollInterval = pollInterval
        var byID: [String: (config: InstanceConfig, fingerprint: String)] = [:]
        for instance in configInstances {
            let id = instance.id.lowercased()
            byID[id] = (instance, fingerprints[id] ?? "config:")
        }
        self.configInstances = byID
        configRanks = Self.ranks(configInstances)
        fileIDsState = Locked(Set(byID.keys))
        wakeups = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a look at the store's version now (from any thread).
    nonisolated func wake() { wakeups.continuation.yield() }

    func run() async throws {
        if let notifying = store as? any InstanceChangeNotifying {
            let continuation = wakeups.continuation
            _ = notifying.listenForInstanceChanges { continuation.yield() }
        }
        let continuation = wakeups.continuation
        let interval = pollInterval
        let ticker = Task {
            while !Task.isCancelled {
                try? await MonotonicTimer.sleep(for: interval)
                continuation.yield()
            }
        }
        defer { ticker.cancel() }
        await withTaskCancellationHandler {
            for await _ in wakeups.stream {
                if Task.isCancelled { break }
                await refreshIfChanged()
            }
        } onCancel: {
            continuation.finish()
        }
    }

    /// Reads the set's version; reads the set and installs it when it moved.
    func refreshIfChanged() async {
        do {
            let version = try await store.storedInstancesVersion()
            if version != directory.snapshot.storedVersion { try await refresh() }
        } catch {
            logger.debug("Stored instances not read; the last ones are served", ["error": "\(error)"])
        }
    }

    /// Reads every stored instance and installs the config file's plus the store's as the directory's set,
    /// rebuilding the senders of what changed only. - Throws: when the store cannot be read (nothing changes).
    func refresh() async throws {
        let (version, rows) = try await store.storedInstances()
        let current = directory.snapshot
        var storedByID: [String: StoredInstance] = [:]
        for row in rows { storedByID[row.id.lowercased()] = row }
        let merged = InstanceSetMerge.merge(
            config: configInstances.mapValues(\.fingerprint),
            stored: storedByID.mapValues(\.version))
        for id in merged.shadowed where reported.insert("shadowed \(id)").inserted {
            logger.error(
                "A stored instance has the id of a config-file instance: the config file's is served, the "
                    + "stored one is not (delete it, or remove the file's)", ["instance": id])
        }
        var entries: [String: InstanceDirectory.Entry] = [:]
        for (id, want) in merged.wanted {
            if let old = current.entries[id], old.fingerprint == want.fingerprint {
                entries[id] = old
                continue
            }
            switch want.source {
            case .config:
                guard let instance = configInstances[id] else { continue }
                if let entry = build(instance.config, source: .config, fingerprint: want.fingerprint, version: nil) {
                    entries[id] = entry
                } else if let old = current.entries[id] {
                    entries[id] = old
                }
            case .store:
                guard let row = storedByID[id] else { continue }
                if let config = open(row),
                    let entry = build(config, source: .store, fingerprint: want.fingerprint, version: row.version)
                {
                    entries[id] = entry
                } else if let old = current.entries[id], old.source == .store {
                    entries[id] = old
                }
            }
        }
        let plan = InstanceSetPlan(
            current: current.entries.mapValues(\.fingerprint),
            wanted: entries.mapValues(\.fingerprint))
        for (id, entry) in entries { entries[id]?.rank = entry.source == .config ? configRanks[id] ?? .max : .max }
        let retired = directory.install(entries, storedVersion: version)
        metrics.set(.storedInstancesVersion, to: Double(version))
        if !plan.isEmpty {
            logger.notice(
                "Instances changed",
                [
                    "added": plan.added.joined(separator: ","),
                    "changed": plan.changed.joined(separator: ","),
                    "removed": plan.removed.joined(separator: ","),
                    "version": String(version),
                ])
        }
        // A publish that started with a retired runtime keeps it; its senders close when the last such run ends.
        directory.retire(retired.compactMap(\.runtime))
    }

    /// Replaces the config file's instances (a reload) and installs the result.
    func replaceConfigInstances(_ instances: [InstanceConfig], fingerprints: [String: String]) async throws {
        var byID: [String: (config: InstanceConfig, fingerprint: String)] = [:]
        for instance in instances {
            let id = instance.id.lowercased()
            byID[id] = (instance, fingerprints[id] ?? "config:")
        }
        configInstances = byID
        configRanks = Self.ranks(instances)
        fileIDsState.withLock { $0 = Set(byID.keys) }
        try await refresh()
    }

    private static func ranks(_ instances: [InstanceConfig]) -> [String: Int] {
        Dictionary(instances.enumerated().map { ($1.id.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The ids of the config file's instances (lower-cased): read-only through the API.
    nonisolated var fileIDs: Set<String> { fileIDsState.withLock { $0 } }

    private func open(_ row: StoredInstance) -> InstanceConfig? {
        let id = row.id.lowercased()
        guard let seal, let definition = InstanceDefinition.open(row, with: seal) else {
            if reported.insert("unopenable \(id) \(row.version)").inserted {
                logger.error(
                    seal == nil
                        ? "A stored instance cannot be served: keys.encryptionKey is not set on this node"
                        : "A stored instance does not open with keys.encryptionKey (another key sealed it?): not served",
                    ["instance": id])
            }
            return nil
        }
        switch definition.validate(id: id, policy: policy, environment: environment, validateKey: validateKey) {
        case .valid(let config, _):
            return config
        case .invalid(let issues):
            if reported.insert("invalid \(id) \(row.version)").inserted {
                for issue in issues {
                    logger.error(
                        "A stored instance is not valid on this node: not served",
                        ["instance": id, "field": issue.path, "problem": issue.message])
                }
            }
            return nil
        }
    }

    private func build(
        _ config: InstanceConfig, source: InstanceDirectory.Source, fingerprint: String,
        version: Int64?
    ) -> InstanceDirectory.Entry? {
        do {
            let runtime = try InstanceRuntime(config: config, senders: senders)
            if let providerTokens { runtime.hms?.accessTokens.share(through: providerTokens) }
            return InstanceDirectory.Entry(
                config: config, runtime: runtime, source: source, fingerprint: fingerprint,
                version: version)
        } catch {
            logger.error(
                "An instance's senders cannot be built: not served as changed",
                ["instance": config.id, "error": "\(error)"])
            return nil
        }
    }
}
