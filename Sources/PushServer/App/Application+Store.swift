import Foundation
import Logging
import Observability
import PostgreSQLStore
import PushStore
import SQLiteStore

extension Application {
    /// Opens the backend `storage.backend` names: the one place that opens a backend (config loading also names
    /// PostgreSQL, to check a connection string: `ServerConfig+Storage.swift`).
    /// - Throws: the backend's open error (an unreachable PostgreSQL is a `StoreUnavailableError`).
    /// - Parameters:
    ///   - nodeID: `engine.nodeId`, held by a PostgreSQL store while it is open.
    ///   - exclusive: whether an SQLite store holds the database lock (the server; tools that run beside it, like
    ///     `push-server export`, do not).
    static func openStore(
        _ storage: ServerConfig.Storage, nodeID: String? = nil, exclusive: Bool = true, logger: Logger,
        healthEvents: @escaping @Sendable (StoreHealthEvent) -> Void
    ) async throws -> any PushStorage {
        switch storage.backend {
        case .sqlite:
            var configuration = SQLitePushStore.Configuration(path: storage.path)
            configuration.synchronous = storage.synchronous == .full ? .full : .normal
            configuration.writerCacheSizeKiB = storage.sqliteCacheMiB * 1024
            // One server per database file: a restart then resumes the publishes a crashed process held at once.
            configuration.exclusive = exclusive
            configuration.logger = logger
            configuration.healthEvents = healthEvents
            return try await SQLitePushStore.open(configuration)
        case .postgresql:
            guard let settings = storage.postgresql else {
                // Config loading refuses this; a config built in code may not have.
                throw ConfigError(issues: [
                    ConfigIssue("storage.postgresql", "is required when storage.backend is \"postgresql\"")
                ])
            }
            var configuration = PostgreSQLPushStore.Configuration(connectionString: settings.connectionString)
            configuration.poolSize = settings.poolSize
            configuration.nodeID = nodeID
            configuration.logger = logger
            configuration.healthEvents = healthEvents
            return try await PostgreSQLPushStore.open(configuration)
        }
    }

    /// The embedded store's own memory on `/metrics` (`push_store_sqlite_memory_bytes`): its page caches grow with
    /// the database up to their configured sizes, which an operator watching RSS needs to see apart from the rest.
    static func collectStoreMemory(_ storage: ServerConfig.Storage, into metrics: Metrics) {
        guard storage.backend == .sqlite else { return }
        metrics.declare(.storeSQLiteMemoryBytes)
        metrics.addCollector { metrics in
            metrics.set(.storeSQLiteMemoryBytes, to: Double(SQLiteMemory.bytesInUse))
        }
    }
}
