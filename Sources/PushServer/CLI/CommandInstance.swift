import ConfigModel
import Foundation
import JWTSigner
import PushStore

/// The instance a command names with `--instance`, found as a server on the same config finds it: the config
/// file's, else a run-time instance stored in the store the config names (`push-server instances`, the admin API),
/// opened with `keys.encryptionKey` and validated as the server validates it. The one look-up of every command
/// that acts on one instance (`keys`, `token`, `send`, `import`, `export`, `audit list`), so none of them misses
/// an instance the servers serve.
enum CommandInstance {
    /// The instance `id` from the config file, else from `store`. - Throws: `UsageError` naming why when neither
    /// has it usable here (unknown, sealed with another key, not valid on this node); the store's error when it
    /// cannot be read.
    static func find(
        _ id: String, config: ServerConfig, store: any InstanceDefinitionStore,
        validateKey: @escaping @Sendable (String) -> String? = { _ in nil }
    ) async throws -> InstanceConfig {
        if let instance = config.instance(id) { return instance }
        let (_, rows) = try await store.storedInstances()
        guard let row = rows.first(where: { $0.id == id.lowercased() }) else {
            throw UsageError("no instance \(id) in the config or the store")
        }
        guard let seal = config.keys.encryptionKey.flatMap({ try? SecretSeal(deriving: $0) }) else {
            throw UsageError(
                "instance \(row.id) is a run-time instance: set keys.encryptionKey in the config to read it")
        }
        guard let definition = InstanceDefinition.open(row, with: seal) else {
            throw UsageError("instance \(row.id) does not open with this config's keys.encryptionKey")
        }
        switch definition.validate(
            id: row.id, policy: config.webhooks.policy,
            environment: ProcessInfo.processInfo.environment, validateKey: validateKey)
        {
        case .valid(let instance, _):
            return instance
        case .invalid(let issues):
            let problems = issues.map { "\($0.path): \($0.message)" }.joined(separator: "; ")
            throw UsageError("instance \(row.id) is stored but not valid on this node: \(problems)")
        }
    }

    /// `find` in the command's open store, which is closed before the error is thrown (the command stops there).
    static func find(
        _ id: String, config: ServerConfig, closingOnFailure store: any PushStorage,
        validateKey: @escaping @Sendable (String) -> String? = { _ in nil }
    ) async throws -> InstanceConfig {
        do {
            return try await find(id, config: config, store: store, validateKey: validateKey)
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// `find` for a command that needs no store for a config-file instance (`send`, `token`): the store is opened
    /// only when the config file does not list `id`, and closed before returning.
    static func find(
        _ id: String, config: ServerConfig,
        validateKey: @escaping @Sendable (String) -> String? = { _ in nil }
    ) async throws -> InstanceConfig {
        if let instance = config.instance(id) { return instance }
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled,
            healthEvents: { _ in })
        let instance = try await find(id, config: config, closingOnFailure: store, validateKey: validateKey)
        try? await store.close()
        return instance
    }
}
