import BeamsModel
import ConfigModel
import Locking
import Observability

/// Every instance this node serves, from the config file and from the store, as one versioned snapshot that every
/// look-up goes through (API routes, the publish engine, the console). A change installs a whole new snapshot
/// under the lock; whoever read the old one (a publish already running) keeps what it read.
package final class InstanceDirectory: Sendable {
    /// Where an instance is defined.
    package enum Source: String, Sendable {
        /// The config file: read-only through the API, changed by editing the file and reloading (SIGHUP).
        case config
        /// The store (admin API, `push-server instances`).
        case store
    }

    /// One instance as served.
    package struct Entry: Sendable {
        package var config: InstanceConfig
        /// Its senders; nil in a directory that only answers look-ups (API-only contexts in tests).
        package var runtime: InstanceRuntime?
        package var source: Source
        /// What the entry was built from (`config:<definition>` or `store:<version>`): an equal fingerprint means
        /// the built senders can be kept.
        package var fingerprint: String
        /// The stored row's version (store instances).
        package var version: Int64? = nil
        /// Where it is listed (`/ready`, the console): a config-file instance at its place in the file, the
        /// store's after them (`Int.max`, then by id).
        package var rank = Int.max

        package init(
            config: InstanceConfig, runtime: InstanceRuntime?, source: Source, fingerprint: String,
            version: Int64? = nil, rank: Int = Int.max
        ) {
            self.config = config
            self.runtime = runtime
            self.source = source
            self.fingerprint = fingerprint
            self.version = version
            self.rank = rank
        }
    }

    /// The whole set at one moment.
    package struct Snapshot: Sendable {
        /// Raised by every install on this node (for `push_instances_generation`-style checks and tests).
        var generation: UInt64 = 0
        /// The store's set version the stored entries were read at.
        package var storedVersion: Int64 = 0
        /// By lower-cased id.
        package var entries: [String: Entry] = [:]

        /// The entries as listed: the config file's in file order, then the store's by id.
        var listed: [Entry] {
            entries.sorted { ($0.value.rank, $0.key) < ($1.value.rank, $1.key) }.map(\.value)
        }
    }

    private let state: Locked<Snapshot>
    private let observers = Locked<[@Sendable (Snapshot) -> Void]>([])
    /// Runtimes retired by an install, until shutdown (closed ones are dropped at the next retirement).
    private let retired = Locked<[InstanceRuntime]>([])

    /// A directory of config-file instances with their senders.
    package init(runtimes: [InstanceRuntime], fingerprints: [String: String] = [:]) {
        var snapshot = Snapshot()
        for (rank, runtime) in runtimes.enumerated() {
            let id = runtime.config.id.lowercased()
            snapshot.entries[id] = Entry(
                config: runtime.config, runtime: runtime, source: .config,
                fingerprint: fingerprints[id] ?? "config:", rank: rank)
        }
        state = Locked(snapshot)
    }

    /// A directory that only answers look-ups (no senders).
    package init(configs: [InstanceConfig]) {
        var snapshot = Snapshot()
        for (rank, config) in configs.enumerated() {
            snapshot.entries[config.id.lowercased()] = Entry(
                config: config, runtime: nil, source: .config,
                fingerprint: "config:", rank: rank)
        }
        state = Locked(snapshot)
    }

    /// The current snapshot.
    package var snapshot: Snapshot { state.withLock { $0 } }

    /// The instance `id` (case-insensitive), nil when not served (never configured, or deleted).
    package func entry(_ id: String) -> Entry? { state.withLock { $0.entries[id.lowercased()] } }

    /// The instance `id`'s configuration, nil when not served.
    package func config(_ id: String) -> InstanceConfig? { entry(id)?.config }

    /// The instance `id`'s senders, nil when not served.
    package func runtime(_ id: String) -> InstanceRuntime? { entry(id)?.runtime }

    /// The instance `id`'s senders, held for a publish run (`InstanceRuntime.release()` when it ends), nil when
    /// not served. A runtime retired between the read and the hold is passed over: `retire` comes after the
    /// install that replaced it, so the directory already serves its successor (or nothing).
    package func hold(_ id: String) -> InstanceRuntime? {
        // Bounded: each pass reads a newer snapshot; only a change on every pass could keep it going.
        for _ in 0..<100 {
            guard let runtime = runtime(id) else { return nil }
            if runtime.hold() { return runtime }
        }
        return runtime(id)
    }

    /// Retires the runtimes an install replaced: their senders close when the last run holding them ends (at
    /// once when none does), and at shutdown at the latest (`runtimesToClose`).
    package func retire(_ runtimes: [InstanceRuntime]) {
        guard !runtimes.isEmpty else { return }
        retired.withLock { list in
            list.removeAll { !$0.lifetime.isOpen }
            list += runtimes
        }
        for runtime in runtimes { runtime.retire() }
    }

    /// Every runtime whose senders shutdown closes: the served ones and the retired ones not closed yet.
    package var runtimesToClose: [InstanceRuntime] { runtimes + retired.withLock { $0 } }

    /// Every instance's configuration, in listing order (`Entry.rank`).
    package var configs: [InstanceConfig] { state.withLock { $0.listed.map(\.config) } }

    /// Every instance's senders, in listing order (`Entry.rank`).
    package var runtimes: [InstanceRuntime] { state.withLock { $0.listed.compactMap(\.runtime) } }

    /// Installs `entries` as the whole set. - Returns: the entries no longer served as they were (removed or
    /// rebuilt), whose senders the caller retires.
    @discardableResult
    package func install(_ entries: [String: Entry], storedVersion: Int64) -> [Entry] {
        let (retired, installed) = state.withLock { snapshot -> ([Entry], Snapshot) in
            let retired = snapshot.entries.compactMap { id, old in
                entries[id]?.fingerprint == old.fingerprint ? nil : old
            }
            snapshot.entries = entries
            snapshot.storedVersion = storedVersion
            snapshot.generation += 1
            return (retired, snapshot)
        }
        for observer in observers.withLock({ $0 }) { observer(installed) }
        return retired
    }

    /// Calls `observer` after each install (outside the lock), with the installed snapshot: per-instance budgets
    /// and weights follow the set.
    package func observe(_ observer: @escaping @Sendable (Snapshot) -> Void) {
        observers.withLock { $0.append(observer) }
    }
}

/// What changes between two sets of instances, by fingerprint: the pure part of a reload.
package struct InstanceSetPlan: Sendable, Equatable {
    package var added: [String] = []
    package var changed: [String] = []
    package var removed: [String] = []
    var unchanged: [String] = []

    /// Ids sorted, so logs and tests read the same every time.
    package init(current: [String: String], wanted: [String: String]) {
        for (id, fingerprint) in wanted {
            switch current[id] {
            case nil: added.append(id)
            case fingerprint?: unchanged.append(id)
            default: changed.append(id)
            }
        }
        removed = current.keys.filter { wanted[$0] == nil }
        added.sort()
        changed.sort()
        removed.sort()
        unchanged.sort()
    }

    init(added: [String] = [], changed: [String] = [], removed: [String] = [], unchanged: [String] = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
        self.unchanged = unchanged
    }

    package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
}

/// The two sources of instances as one set: a config-file instance wins over a stored one with the same id (which
/// is reported, never served), so neither can shadow the other.
package enum InstanceSetMerge {
    /// - Returns: the wanted fingerprint by lower-cased id with its source, and the stored ids a config instance
    ///   shadows.
    package static func merge(config: [String: String], stored: [String: Int64])
        -> (wanted: [String: (source: InstanceDirectory.Source, fingerprint: String)], shadowed: [String])
    {
        var wanted: [String: (source: InstanceDirectory.Source, fingerprint: String)] = [:]
        for (id, fingerprint) in config { wanted[id] = (.config, fingerprint) }
        var shadowed: [String] = []
        for (id, version) in stored {
            if wanted[id] != nil {
                shadowed.append(id)
            } else {
                wanted[id] = (.store, "store:\(version)")
            }
        }
        return (wanted, shadowed.sorted())
    }
}
